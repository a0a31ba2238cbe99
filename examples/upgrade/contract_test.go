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
		{Name: "the demo mesh is no cluster to apply to", Args: []string{"--demo"}, Code: cli.ExitUsage, Want: []string{"flag provided but not defined: -demo"}},
	}...)
	clitest.Contract(t, "upgrade", run, rows)

}
