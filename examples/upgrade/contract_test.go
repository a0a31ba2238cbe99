package main

import (
	"testing"

	"github.com/ambientkit/ambientkit/examples/internal/cli"
	"github.com/ambientkit/ambientkit/examples/internal/cli/clitest"
)

// TestTheCLIContract runs the contract every example keeps (clitest.Rows), and this one's own rows
// of bad input, against upgrade.
func TestTheCLIContract(t *testing.T) {
	rows := append(clitest.Rows(), []clitest.Row{
		{Name: "a batch size of 0 is refused, not made 1", Args: []string{"--batch-size", "0"}, Code: cli.ExitUsage, Want: []string{"--batch-size 0: want 1 or more"}},
		{Name: "the demo mesh runs only on the in-memory cluster, as a dry run", Args: []string{"--demo"}, Code: cli.ExitUsage, Want: []string{"add --dry-run", "--demo --dry-run"}},
		{Name: "the demo mesh and a live cluster are refused together", Args: []string{"--demo", "--dry-run", "--context", "prod"}, Code: cli.ExitUsage, Want: []string{"say which cluster once"}},
		{Name: "a dry run of the demo mesh runs the executor to its end on the in-memory cluster, and says nothing real changed", Args: []string{"--demo", "--dry-run"}, Code: cli.ExitOK,
			Want: []string{"trying the plan on the in-memory demo cluster", "StepFinished istiod/1-30-3/remove", "done on the in-memory demo cluster: 108 steps", "nothing outside this process was changed"},
			Not:  []string{"plan saved to"}},
	}...)
	clitest.Contract(t, "upgrade", run, rows)

}
