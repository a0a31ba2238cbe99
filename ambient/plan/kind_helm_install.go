package plan

// KindHelmInstall is the kind of steps whose action is Step.HelmInstall.
const KindHelmInstall Kind = "HelmInstall"

var helmInstallKind = kindSpec{
	kind:    KindHelmInstall,
	payload: payloadOf(func(s *Step) *HelmRelease { return s.HelmInstall }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		validateHelmRelease(s.HelmInstall, where, bad)
	},
	commands: func(s *Step) []string { return []string{helmCommand("install", s.HelmInstall)} },
	node:     noNode,
	summary: func(s *Step) (summaryRow, bool) {
		h := s.HelmInstall
		how := "install"
		if m := movedSummary(h); m != "" {
			how += " (" + m + ")"
		}
		return helmRow(h.Namespace, h.Release, h.Chart.Name, "–", h.Chart.Version, how), true
	},
	timing: helmTiming,
	// action_helm_install.go, through the HelmClient: what Helm stores and applies (permissions_helm.go).
	permissions: func(s *Step, dry bool, n need) {
		h := s.HelmInstall
		n.helm(helmInstallOp, h.Namespace, h.Release, h.Chart.Name, h.Values, h.ReuseValues, dry, true)
	},
	release: func(s *Step) (string, string) { return helmReleaseOf(s.HelmInstall) },
}
