// Package tags plans revision-tag moves. A tag is a name (prod, canary, default) that namespaces,
// pods and gateways use instead of a revision; moving it to a new revision is how workloads move to a
// new control plane one group at a time.
//
// BlastRadius says what a tag reaches (namespaces, sidecar pods injected through it, gateways and
// waypoints it owns, and the ambient namespaces, Services and workloads whose traffic goes through
// those waypoints); Order sorts tags lowest risk first;
// MoveTag, one of the five primitives, plans one move with its restarts, verification and rollback,
// after the compatibility gate (package compat); what the mesh forbids is a finding with a code
// (TAG_UNKNOWN, TAG_TARGET_REVISION_NOT_READY, ...). AddMoves adds the moves of every tag of some
// revisions, in risk order, to a plan being built (steps.Builder), as ambient.PlanUpgrade does; both
// take MoveOptions. Render renders a tag's objects as the istiod chart does. Everything
// here is pure.
package tags
