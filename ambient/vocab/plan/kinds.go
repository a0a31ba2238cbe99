package plan

// kindSpec is what the plan package knows about one action kind: where its payload sits in a Step,
// how it is validated, which commands a person would type to do it by hand, and the node it works
// on. Every kind's spec is defined in its own file, kind_<action>.go, next to its payload type and
// its Kind constant, and listed once in kindSpecs. Every part is set in every spec, to its kind's
// value or to the shared value that says "none" (noNode), so that a spec cannot forget one: a test
// fails when a Step action field has no spec or a spec misses a part. What the runbook says of a
// kind (package runbook), the time its steps take (package estimate) and the RBAC they need (package
// rbac) are in those packages' kind tables, which tests hold to Kinds.
type kindSpec struct {
	kind Kind
	// payload returns the step's payload of this kind, nil when the field is not set.
	payload func(s *Step) any
	// validate reports what is wrong with the payload through bad.
	validate func(s *Step, where string, bad func(string, ...any))
	// commands are the helm and kubectl commands that do the step by hand.
	commands func(s *Step) []string
	// node names the node the step's action works on, "" when it works on none (noNode): Step.Node.
	node func(s *Step) string
	// undoByHand is how a person undoes a step of the kind that has no rollback step, as the
	// runbook's "undo" line ("" when the kind has none: noUndoByHand): UndoByHand.
	undoByHand func(s *Step) string
	// checkByHand is the weaker check a person can type for a check of the step that only the
	// executor does, with what it checks (noCheckByHand): CheckByHand.
	checkByHand func(s *Step, c Check) (what, cmd string)
	// readOnly kinds only look at the cluster (waits, checks, approvals, health gates).
	readOnly bool
	// keepsMesh kinds change nothing in the mesh itself (read-only kinds and Backup, which writes only
	// to the backup store); the runbook says of the others when they have no rollback.
	keepsMesh bool
}

// noNode is the node of kinds whose action works on no node.
func noNode(*Step) string { return "" }

// noUndoByHand is the undoByHand of kinds that have no undo by hand beside their rollback step.
func noUndoByHand(*Step) string { return "" }

// noCheckByHand is the checkByHand of kinds whose checks have no weaker form by hand.
func noCheckByHand(*Step, Check) (what, cmd string) { return "", "" }

// kindSpecs is the table of action kinds, in Step field order.
var kindSpecs = []kindSpec{
	helmInstallKind, helmUpgradeKind, helmUninstallKind, helmRollbackKind,
	applyObjectKind, deleteObjectKind, patchLabelsKind, annotateKind, moveTagKind,
	cordonKind, uncordonKind, drainKind, deletePodKind, restartKind, reinjectKind,
	waitForKind, verifyKind, backupKind, restoreKind, approvalKind, healthGateKind,
}

// payloadOf adapts a field accessor, so that an unset pointer gives an untyped nil.
func payloadOf[T any](field func(*Step) *T) func(*Step) any {
	return func(s *Step) any {
		if p := field(s); p != nil {
			return p
		}
		return nil
	}
}

func specOf(k Kind) (*kindSpec, bool) {
	for i := range kindSpecs {
		if kindSpecs[i].kind == k {
			return &kindSpecs[i], true
		}
	}
	return nil, false
}

// Kinds returns every action kind, in Step field order.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kindSpecs))
	for _, s := range kindSpecs {
		out = append(out, s.kind)
	}
	return out
}

// ReadOnly reports whether steps of the kind only look at the cluster: WaitFor, Verify, Approval and
// HealthGate.
func (k Kind) ReadOnly() bool {
	s, ok := specOf(k)
	return ok && s.readOnly
}

// ChangesMesh reports whether steps of the kind change the mesh (everything but the read-only kinds
// and Backup).
func (k Kind) ChangesMesh() bool {
	s, ok := specOf(k)
	return ok && !s.keepsMesh
}

// Commands returns the helm and kubectl commands a person would type to do the step by hand.
func Commands(s *Step) []string {
	spec, ok := specOf(s.Kind())
	if !ok {
		return nil
	}
	return spec.commands(s)
}

// UndoByHand says how a person undoes the step when it has no rollback step but its kind knows how
// (an uninstall whose backup holds the release's values), "" otherwise.
func UndoByHand(s *Step) string {
	spec, ok := specOf(s.Kind())
	if !ok {
		return ""
	}
	return spec.undoByHand(s)
}

// CheckByHand returns, for a check of the step that has no command of its own (CheckCommand is
// empty), the weaker check a person can type instead and what it checks ("only that every file the
// step wrote is there and not empty"); empty when there is none.
func CheckByHand(s *Step, c Check) (what, cmd string) {
	spec, ok := specOf(s.Kind())
	if !ok {
		return "", ""
	}
	return spec.checkByHand(s, c)
}

func validateAction(s *Step, where string, bad func(string, ...any)) {
	switch k := s.actions(); len(k) {
	case 0:
		bad("%s: has no action; set exactly one of helmInstall, helmUpgrade, moveTag, drain, ...", where)
	case 1:
		spec, _ := specOf(k[0])
		spec.validate(s, where, bad)
	default:
		bad("%s: has %d actions (%v); a step carries exactly one", where, len(k), k)
	}
}

// validateNothing is the validation of payloads that have no required field.
func validateNothing(*Step, string, func(string, ...any)) {}

func mustNotBeEmpty(where, field, value string, bad func(string, ...any)) {
	if value == "" {
		bad("%s: %s is empty", where, field)
	}
}
