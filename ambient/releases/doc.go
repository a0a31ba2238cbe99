// Package releases holds the Istio release data the planners reason with: which versions exist, when
// each minor was released and reaches end of life, which Kubernetes versions it supports and which
// Gateway API bundle it needs.
//
// The data is an embedded YAML file (releases.yaml, documented field by field). Each field of a minor
// states where its value came from and whether it is an estimate, and callers can ask both
// (Minor.Source, Minor.IsEstimated, Minor.Known), so a planner can say when an estimate decided
// something. A caller who knows of newer releases loads their own file with Load or LoadFile and
// passes it in the planners' options; no recompilation is needed. Files of the older flat shape
// (APIVersionV1Alpha1) still load.
//
// The package is pure: it parses what it is given and reads files only when asked to (LoadFile); it
// never fetches anything.
package releases
