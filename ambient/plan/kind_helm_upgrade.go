package plan

import "fmt"

// KindHelmUpgrade is the kind of steps whose action is Step.HelmUpgrade.
const KindHelmUpgrade Kind = "HelmUpgrade"

var helmUpgradeKind = kindSpec{
	kind:    KindHelmUpgrade,
	payload: payloadOf(func(s *Step) *HelmRelease { return s.HelmUpgrade }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		validateHelmRelease(s.HelmUpgrade, where, bad)
	},
	commands: func(s *Step) []string { return []string{helmCommand("upgrade", s.HelmUpgrade)} },
	failure: func(s *Step) string {
		h := s.HelmUpgrade
		return fmt.Sprintf("Helm records a failed revision of %s and its objects may be partly changed (`helm history %s -n %s`): fix the cause and run the step again, or undo it", h.Release, h.Release, h.Namespace)
	},
	node: noNode,
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
}
