package plan

// KindHelmUpgrade is the kind of steps whose action is Step.HelmUpgrade.
const KindHelmUpgrade Kind = "HelmUpgrade"

var helmUpgradeKind = kindSpec{
	kind:    KindHelmUpgrade,
	payload: payloadOf(func(s *Step) *HelmRelease { return s.HelmUpgrade }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		validateHelmRelease(s.HelmUpgrade, where, bad)
	},
	commands:    func(s *Step) []string { return []string{helmCommand("upgrade", s.HelmUpgrade)} },
	node:        noNode,
	undoByHand:  noUndoByHand,
	checkByHand: noCheckByHand,
}
