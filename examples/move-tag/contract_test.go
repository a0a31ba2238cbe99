package main

import (
	"testing"

	"github.com/ambientkit/ambientkit/examples/internal/cli"
	"github.com/ambientkit/ambientkit/examples/internal/cli/clitest"
)

// TestTheCLIContract runs the contract every example keeps (clitest.Rows), and this one's own rows
// of bad input, against move-tag.
func TestTheCLIContract(t *testing.T) {
	rows := append(clitest.Rows(), []clitest.Row{
		{Name: "a tag name that is none is refused", Args: []string{"--demo", "--tag", "Prod!", "--revision", "1-31-4"}, Code: cli.ExitUsage, Want: []string{`--tag "Prod!" is not a valid name`}},
	}...)
	clitest.Contract(t, "move-tag", run, rows)
	clitest.Outputs(t, "move-tag", run, "--demo", "--assume-installed", "1.31.4")
	clitest.Verdicts(t, "move-tag", run, clitest.Demo, "--assume-installed", "1.31.4")
}
