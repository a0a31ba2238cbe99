package plan

import "fmt"

// KindHelmInstall is the kind of steps whose action is Step.HelmInstall.
const KindHelmInstall Kind = "HelmInstall"

var helmInstallKind = kindSpec{
	kind:    KindHelmInstall,
	payload: payloadOf(func(s *Step) *HelmRelease { return s.HelmInstall }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		validateHelmRelease(s.HelmInstall, where, bad)
	},
	commands: func(s *Step) []string { return []string{helmCommand("install", s.HelmInstall)} },
	failure: func(s *Step) string {
		h := s.HelmInstall
		return fmt.Sprintf("Helm may leave release %s failed (`helm status %s -n %s`): undo it, fix the cause and run the step again", h.Release, h.Release, h.Namespace)
	},
	node: noNode,
	summary: func(s *Step) (summaryRow, bool) {
		h := s.HelmInstall
		how := "install"
		if m := movedSummary(h); m != "" {
			how += " (" + m + ")"
		}
		return helmRow(h.Namespace, h.Release, h.Chart.Name, "–", h.Chart.Version, how), true
	},
	timing: helmTiming,
}
