// Package tags plans revision-tag moves. A tag is a name (prod, canary, default) that namespaces,
// pods and gateways use instead of a revision; moving it to a new revision is how workloads move to a
// new control plane one group at a time.
//
// BlastRadius says what a tag reaches (namespaces, sidecar pods injected through it, gateways and
// waypoints it owns, ambient namespaces that use its waypoints); Order sorts tags lowest risk first;
// MoveTag plans one move with its restarts, verification and rollback. Everything here is pure.
package tags
