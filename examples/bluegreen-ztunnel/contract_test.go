package main

import (
	"testing"

	"github.com/ambientkit/ambientkit/examples/internal/cli"
	"github.com/ambientkit/ambientkit/examples/internal/cli/clitest"
)

// TestTheCLIContract runs the contract every example keeps (clitest.Rows), and this one's own rows
// of bad input, against bluegreen-ztunnel.
func TestTheCLIContract(t *testing.T) {
	rows := append(clitest.Rows(), []clitest.Row{
		{Name: "a batch size of 0 is refused, not made 1", Args: []string{"--demo", "--green-nodepools", "general", "--batch-size", "0"}, Code: cli.ExitUsage, Want: []string{"--batch-size 0: want 1 or more"}},
		{Name: "a NodePool name that is none is refused", Args: []string{"--demo", "--green-nodepools", "Bad_Pool"}, Code: cli.ExitUsage, Want: []string{`--green-nodepools "Bad_Pool" is not a valid name`}},
	}...)
	clitest.Contract(t, "bluegreen-ztunnel", run, rows)
	clitest.Outputs(t, "bluegreen-ztunnel", run, "--demo", "--green-nodepools", "general,batch")
	clitest.Verdicts(t, "bluegreen-ztunnel", run, clitest.Demo, "--green-nodepools", "general,batch")
	clitest.Verdicts(t, "bluegreen-ztunnel", run, clitest.Dump, "--green-nodes", "2")
}
