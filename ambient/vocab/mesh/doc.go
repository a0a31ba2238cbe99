// Package mesh holds the vocabulary of an Istio ambient mesh's state: the Snapshot that observation
// produces and every planner reads, and the Version type all version rules are written in.
//
// Everything here is plain data: no clients, no clocks, no I/O. A Snapshot encodes to YAML or JSON and
// decodes back to an equal value, so a snapshot taken from a live cluster can be saved, reviewed,
// diffed and planned against later.
package mesh
