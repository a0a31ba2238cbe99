// Package examples holds five thin programs over ambientkit's public API, one per primitive, each
// under 150 lines (plan-upgrade 65, upgrade 69, bluegreen-ztunnel 81, move-tag 102,
// migrate-namespace 121). What they share is in examples/internal/cli, so all five keep one contract:
// the source of the mesh (a live cluster through --kubeconfig/--context, the default as kubectl reads
// it; a dump saved with kubectl, --from-dir; or the embedded demo mesh, --demo), --waive, --today,
// --list-codes, -o markdown|yaml|json and --full, the same checks of bad input, and the same exit
// codes: 0 runnable (or done), 1 error, 2 bad flags, 3 blocked by findings or blocked steps, 4 not
// runnable until waived. Every output opens with where the mesh was read from, and the plan document
// records it (metadata.source); a plan made from the demo applies to no cluster, one made elsewhere
// is named as such before it is applied.
//
//   - plan-upgrade (ambient.PlanUpgrade): print the compatibility report and the upgrade plan as a
//     Markdown runbook or the plan document. It changes nothing.
//   - upgrade (ambient.PlanUpgrade, then the executor): plan an upgrade of a live cluster, print and
//     save it, ask (or --yes), apply it with progress (a live line on a terminal, plain lines in a
//     pipe, JSON for pipelines) and Kubernetes Events; --plan-only, --dry-run, --saved (apply a
//     reviewed plan file), --resume a run that stopped, --rollback one step, --rbac; --demo --dry-run
//     runs the executor on an in-memory cluster holding the demo mesh, so it can be seen at work.
//   - bluegreen-ztunnel (ztunnel.BlueGreenZtunnel): plan and apply a blue-green ztunnel upgrade by
//     node pool (--green-nodepools, --relabel or --green-nodes; --jobs, --local-storage), with the
//     apply flags of upgrade.
//   - move-tag (tags.MoveTag): print what each revision tag reaches (its blast radius), the tags in
//     risk order, and the plan of one tag move.
//   - migrate-namespace (migrate.MigrateNamespace): the readiness report of a namespace, the plan that
//     moves it from sidecars to ambient, and applying it with the apply flags of upgrade
//     (its --rollback STEP undoes back to STEP, inclusive); planning only writes no plan file unless
//     --plan-file is given.
//
// The planning flags are the same where they apply: --target, --strategy, --ztunnel with
// --batch-size and --drain-timeout, --charts DIR|URL|oci://REF for mirrors and air-gapped clusters,
// --chart-index. Run them with go run ./examples/<name> --help; examples/internal/cli/clitest holds the contract each
// example's tests run.
package examples
