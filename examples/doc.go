// Package examples holds thin programs over ambientkit's public API, each under 150 lines:
//
//   - plan-upgrade: observe a mesh (the embedded demo, a folder of YAML, or a live cluster), print the
//     compatibility report and the upgrade plan as Markdown, YAML or JSON.
//   - move-tag: print what a revision tag reaches (its blast radius), the tags in risk order, and the
//     plan of one tag move.
//   - upgrade: plan an upgrade of a live cluster, print it, ask for confirmation (or --yes), apply it
//     with a live progress line, and --resume a run that stopped.
//   - migrate-namespace: the readiness report of a namespace (live or --from-dir), the plan that moves
//     it to ambient, confirmation, step-by-step progress, and --rollback-to STEP.
//
// Run them with go run ./examples/<name> --help.
package examples
