// Package steps holds the building blocks the component planners (revision, cni, ztunnel, tags and
// migrate) share, so that each plans its own steps without importing another:
//
//   - Builder appends steps to a plan with their dependencies, collects findings, and knows each Helm
//     release as the steps planned so far leave it (revision, chart version, values), so a later step
//     upgrades from the right revision and rolls back to it;
//   - Helm values are merged the same way everywhere (the release's values, then the planner's, then
//     the caller's by chart and by release name), and charts are referenced from one ChartSource;
//   - drain waves: the nodes to drain in a safe order (nodes a PodDisruptionBudget blocks last, then
//     fewer stateful workloads first), with what may hold each drain named, and the drain step itself;
//     the order cut into waves (Index.Waves) so that no wave cordons every node the pods it evicts can
//     move to.
//
// Everything here is pure: no clients, no clock.
package steps
