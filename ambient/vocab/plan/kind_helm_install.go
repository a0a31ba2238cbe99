package plan

// KindHelmInstall is the kind of steps whose action is Step.HelmInstall.
const KindHelmInstall Kind = "HelmInstall"

var helmInstallKind = kindSpec{
	kind:    KindHelmInstall,
	payload: payloadOf(func(s *Step) *HelmRelease { return s.HelmInstall }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		validateHelmRelease(s.HelmInstall, where, bad)
	},
	commands:    func(s *Step) []string { return []string{helmCommand("install", s.HelmInstall)} },
	node:        noNode,
	undoByHand:  noUndoByHand,
	checkByHand: noCheckByHand,
}
