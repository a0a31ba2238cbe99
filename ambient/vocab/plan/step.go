package plan

// Risk grades how much a step can hurt traffic if it goes wrong.
type Risk string

// Risks.
const (
	RiskNone   Risk = "none"
	RiskLow    Risk = "low"
	RiskMedium Risk = "medium"
	RiskHigh   Risk = "high"
)

// Step is one unit of a plan. Exactly one action field is set; Kind names it. Each action's payload
// type, validation and runbook commands sit in the file kind_<action>.go; kinds.go lists them.
type Step struct {
	// ID is stable across re-planning of the same input: "ztunnel/node/pool-a-3/drain".
	ID string `json:"id"`
	// Description says what the step does, Reason why it is needed.
	Description string `json:"description"`
	Reason      string `json:"reason,omitempty"`
	// DependsOn lists IDs of earlier steps that must finish first.
	DependsOn []string `json:"dependsOn,omitempty"`
	Risk      Risk     `json:"risk"`
	// Wave, when set, puts the step in one node's unit of a wave: the units of a wave (its nodes)
	// run at the same time, each unit's steps one after another (see WaveUnit).
	Wave *WaveUnit `json:"wave,omitempty"`
	// Preconditions are re-checked just before the action runs; the step fails, having done nothing,
	// when one does not hold.
	Preconditions []Check `json:"preconditions,omitempty"`

	HelmInstall   *HelmRelease   `json:"helmInstall,omitempty"`
	HelmUpgrade   *HelmRelease   `json:"helmUpgrade,omitempty"`
	HelmUninstall *HelmUninstall `json:"helmUninstall,omitempty"`
	HelmRollback  *HelmRollback  `json:"helmRollback,omitempty"`
	ApplyObject   *ApplyObject   `json:"applyObject,omitempty"`
	DeleteObject  *DeleteObject  `json:"deleteObject,omitempty"`
	PatchLabels   *PatchLabels   `json:"patchLabels,omitempty"`
	Annotate      *Annotate      `json:"annotate,omitempty"`
	MoveTag       *TagMove       `json:"moveTag,omitempty"`
	Cordon        *NodeRef       `json:"cordon,omitempty"`
	Uncordon      *NodeRef       `json:"uncordon,omitempty"`
	Drain         *NodeDrain     `json:"drain,omitempty"`
	DeletePod     *PodSelection  `json:"deletePod,omitempty"`
	Restart       *Restart       `json:"restart,omitempty"`
	Reinject      *Reinject      `json:"reinject,omitempty"`
	WaitFor       *WaitFor       `json:"waitFor,omitempty"`
	Verify        *Verification  `json:"verify,omitempty"`
	Backup        *Backup        `json:"backup,omitempty"`
	Restore       *Restore       `json:"restore,omitempty"`
	Approval      *Approval      `json:"approval,omitempty"`
	HealthGate    *HealthGate    `json:"healthGate,omitempty"`

	// Postconditions are checked after the action; the step is done only when every one holds. (The
	// action that does nothing but check is Verify. Documents of ambientkit.io/v1alpha1 called this
	// list "verification"; Decode converts them.)
	Postconditions []Check `json:"postconditions,omitempty"`
	// Rollback undoes the step, when it can be undone. It is a step of its own with one action.
	Rollback *Step `json:"rollback,omitempty"`
	// Notes are extra facts for the reviewer (what may hold a drain, connection resets, ...).
	Notes []string `json:"notes,omitempty"`
	// Blocked, when set, says why the step must not run yet; the executor refuses it.
	Blocked string `json:"blocked,omitempty"`
}

// WaveUnit places a step in a wave of node units: a planner that moves nodes in batches (ztunnel
// node by node, blue-green drains) gives each node of a batch a unit (cordon, drain, ... for that
// node) and the units of the batch one wave. The steps of a wave stand together in the plan; an
// executor may run its units at the same time, and runs the steps after the wave (its health gate)
// only when every unit is done. A unit's steps depend only on steps before the wave or on earlier
// steps of the same unit, which Plan.Validate checks.
type WaveUnit struct {
	// ID names the wave ("ztunnel/batch/3"); Node the node whose unit the step is in.
	ID   string `json:"id"`
	Node string `json:"node"`
}

// Kind is the name of a step's action. Each kind's constant (KindHelmInstall, KindDrain, ...) sits in
// its file kind_<action>.go; Kinds lists them all.
type Kind string

// actions lists the step's set actions with their kinds.
func (s *Step) actions() []Kind {
	var k []Kind
	for i := range kindSpecs {
		if kindSpecs[i].payload(s) != nil {
			k = append(k, kindSpecs[i].kind)
		}
	}
	return k
}

// Kind returns the kind of the step's action, or "" when it has none or several (Validate says which).
func (s *Step) Kind() Kind {
	k := s.actions()
	if len(k) != 1 {
		return ""
	}
	return k[0]
}

// Action returns the payload of the step's action (a *HelmRelease, *NodeDrain, ...), or nil when the
// step has none or several.
func (s *Step) Action() any {
	spec, ok := specOf(s.Kind())
	if !ok {
		return nil
	}
	return spec.payload(s)
}

// Node returns the node the step's action works on: the node of a Cordon, an Uncordon or a Drain,
// the Node of a DeletePod, the object of a PatchLabels or an Annotate when it is a Node. It is ""
// when the action works on no node, or when the step has no action or several.
func (s *Step) Node() string {
	spec, ok := specOf(s.Kind())
	if !ok {
		return ""
	}
	return spec.node(s)
}
