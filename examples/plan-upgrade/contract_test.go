package main

import (
	"testing"

	"github.com/ambientkit/ambientkit/examples/internal/cli"
	"github.com/ambientkit/ambientkit/examples/internal/cli/clitest"
)

// TestTheCLIContract runs the contract every example keeps (clitest.Rows), and this one's own rows
// of bad input, against plan-upgrade.
func TestTheCLIContract(t *testing.T) {
	rows := append(clitest.Rows(), []clitest.Row{
		{Name: "a batch size of 0 is refused, not made 1", Args: []string{"--demo", "--batch-size", "0"}, Code: cli.ExitUsage, Want: []string{"--batch-size 0: want 1 or more"}},
		{Name: "a negative drain timeout is refused", Args: []string{"--demo", "--drain-timeout", "-1m"}, Code: cli.ExitUsage, Want: []string{"--drain-timeout -1m0s"}},
		{Name: "waiving a code whose finding is blocking in this plan is refused, naming the finding", Args: []string{"--from-dir", clitest.CorpusDump("z02-ztunnel-untrusted-namespace"), "--waive", "ZTUNNEL_NOT_TRUSTED"},
			Code: cli.ExitUsage, Want: []string{"--waive: the plan's finding ZTUNNEL_NOT_TRUSTED on DaemonSet istio-system/ztunnel is blocking"}},
		{Name: "a blocking finding blocks the plan with exit 3", Args: []string{"--from-dir", clitest.CorpusDump("c03-tag-names-missing-revision")},
			Code: cli.ExitBlocked, Want: []string{"the plan is blocked: blocking findings", "TAG_REVISION_MISSING"}},
		{Name: "the most common install, an unrevisioned istiod from Helm, plans runnable by default, in place, and says how to ask for a canary",
			Args: []string{"--from-dir", clitest.CorpusDump("m01-ingress-bypasses-waypoint")}, Code: cli.ExitOK,
			Want: []string{"STRATEGY_IN_PLACE_FOR_UNREVISIONED", "--strategy revision"}, Not: []string{"istiod/default/remove"}},
		{Name: "a canary of an unrevisioned istiod is blocked at its removal, and the finding names the strategy that is not",
			Args: []string{"--from-dir", clitest.CorpusDump("m01-ingress-bypasses-waypoint"), "--strategy", "revision"}, Code: cli.ExitBlocked,
			Want: []string{"OLD_REVISION_STILL_REFERENCED", "--strategy in-place", "istiod/default/remove"}},
		{Name: "two sources are refused", Args: []string{"--demo", "--context", "prod"}, Code: cli.ExitUsage, Want: []string{"say where the mesh is read from once"}},
	}...)
	clitest.Contract(t, "plan-upgrade", run, rows)
	clitest.Outputs(t, "plan-upgrade", run, "--demo")
	clitest.Verdicts(t, "plan-upgrade", run, clitest.Demo)
	clitest.Verdicts(t, "plan-upgrade", run, clitest.Dump)
	clitest.Verdicts(t, "plan-upgrade", run, "--from-dir", clitest.CorpusDump("c03-tag-names-missing-revision"))
}
