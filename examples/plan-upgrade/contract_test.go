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
		{Name: "two sources are refused", Args: []string{"--demo", "--context", "prod"}, Code: cli.ExitUsage, Want: []string{"say where the mesh is read from once"}},
	}...)
	clitest.Contract(t, "plan-upgrade", run, rows)
	clitest.Outputs(t, "plan-upgrade", run, "--demo")
}
