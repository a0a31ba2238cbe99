package plan

// KindHelmUpgrade is the kind of steps whose action is Step.HelmUpgrade.
const KindHelmUpgrade Kind = "HelmUpgrade"

var helmUpgradeKind = kindSpec{
	kind:    KindHelmUpgrade,
	payload: payloadOf(func(s *Step) *HelmRelease { return s.HelmUpgrade }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		validateHelmRelease(s.HelmUpgrade, where, bad)
	},
	commands: func(s *Step) []string { return []string{helmCommand("upgrade", s.HelmUpgrade)} },
	node:     noNode,
	summary: func(s *Step) (summaryRow, bool) {
		h := s.HelmUpgrade
		how := "upgrade"
		if h.FromVersion == h.Chart.Version {
			how = "values"
		}
		if m := movedSummary(h); m != "" {
			how += " (" + m + ")"
		}
		return helmRow(h.Namespace, h.Release, h.Chart.Name, orUnknown(h.FromVersion), h.Chart.Version, how), true
	},
	timing: helmTiming,
	// action_helm_upgrade.go, through the HelmClient: what Helm stores and applies (permissions_helm.go).
	permissions: func(s *Step, dry bool, n need) {
		h := s.HelmUpgrade
		n.helm(helmUpgradeOp, h.Namespace, h.Release, h.Chart.Name, h.Values, h.ReuseValues, dry, h.FromVersion == "" || h.FromVersion != h.Chart.Version)
	},
	release: func(s *Step) (string, string) { return helmReleaseOf(s.HelmUpgrade) },
}
