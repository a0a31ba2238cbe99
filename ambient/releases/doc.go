// Package releases holds the Istio release data the planners reason with: which versions exist, when
// each minor was released and reaches end of life, which Kubernetes versions it supports and which
// Gateway API bundle it needs.
//
// The data is an embedded YAML file (releases.yaml, documented field by field). A caller who knows of
// newer releases loads their own file with Load or LoadFile and passes it in the planners' options; no
// recompilation is needed.
package releases
