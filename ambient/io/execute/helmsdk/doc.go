// Package helmsdk adapts the Helm v3 SDK (helm.sh/helm/v3/pkg/action) to execute.HelmClient.
//
// Charts come from where the plan says (plan.ChartRef): a chart repository URL (located and cached
// like `helm install --repo`), an oci:// reference (through Helm's registry client and its
// credentials file), or a local chart directory or .tgz. Releases are stored by Helm's usual driver
// (Secrets by default), so `helm ls` and `helm history` show what the executor did.
//
// CheckChart confirms before anything changes that a step's chart exists at its version in that
// source (the repository's index.yaml, the registry's tag, or the local chart), and says what the
// source has when it does not (ErrChartVersionMissing). The executor can call it through an
// optional interface; execute.HelmClient is unchanged.
//
// The adapter never waits for workloads to become ready (the executor verifies readiness itself),
// and it is the only package of ambientkit that imports the Helm action package: planners and the
// executor compile without it.
package helmsdk
