// Package tags plans revision-tag moves. A tag is a name (prod, canary, default) that namespaces,
// pods and gateways use instead of a revision; moving it to a new revision is how workloads move to a
// new control plane one group at a time.
//
// BlastRadius says what a tag reaches (namespaces, sidecar pods injected through it, gateways and
// waypoints it owns, and the ambient namespaces, Services and workloads whose traffic goes through
// those waypoints); Order sorts tags lowest risk first;
// MoveTag plans one move with its restarts, verification and rollback; MoveSteps gives the same steps
// for a larger plan, and PlanMoves adds the moves of every tag of some revisions, in risk order, to a
// plan being built (steps.Builder). Render renders a tag's objects as the istiod chart does. Everything
// here is pure.
package tags
