// Package examples holds thin programs over ambientkit's public API, each under 150 lines; what they
// share (flags, --help, exit codes, progress output, the advice after a failure) is in
// examples/internal/cli:
//
//   - plan-upgrade: observe a mesh (the embedded demo, a dump saved with kubectl, or a live cluster),
//     print the compatibility report and the upgrade plan as Markdown, YAML or JSON.
//   - move-tag: print what a revision tag reaches (its blast radius), the tags in risk order, and the
//     plan of one tag move.
//   - upgrade: plan an upgrade of a live cluster, print and save it, ask for confirmation (or --yes),
//     apply it with progress (a live line on a terminal, plain lines in a pipe, JSON for pipelines)
//     and Kubernetes Events on its journal; --dry-run, --saved (apply a reviewed plan file), --resume
//     a run that stopped, --rollback one step.
//   - migrate-namespace: the readiness report of a namespace (live or --from-dir), the plan that moves
//     it to ambient, confirmation, step-by-step progress, and --rollback-to STEP.
//
// The planning examples take the same flags: --kubeconfig/--context (or --from-dir), --target,
// --strategy, --ztunnel with --batch-size and --drain-timeout, --charts DIR|URL|oci://REF for mirrors
// and air-gapped clusters, --chart-index, --waive, --today and -o. Exit codes: 0 runnable (or done),
// 1 error, 2 bad flags, 3 blocked by findings or blocked steps, 4 not runnable until waived.
//
// Run them with go run ./examples/<name> --help.
package examples
