// Package runbook renders a plan as the Markdown runbook a reviewer reads and a person can follow
// by hand: a summary read in a minute (what changes, the findings, the phases and how long they
// take by package estimate, what needs a person), then the steps with the helm and kubectl commands
// that do them (each kind's plan.Commands), their checks, what a failure leaves behind and how to
// undo it. The steps of node waves are written once as a template with a table of the waves'
// nodes; RenderWith with Options{Full: true} writes every step on its own.
//
// What the runbook says of each action kind (its row in "What changes", its "if it fails" line) is
// its entry in kinds.go, which a test holds to plan.Kinds.
package runbook
