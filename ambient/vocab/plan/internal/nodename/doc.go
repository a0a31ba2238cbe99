// Package nodename finds and replaces a node's name where it stands alone in step IDs, texts and
// decoded JSON, for the repetition the plan's YAML and its runbook write once for many nodes.
package nodename
