package main

import (
	"testing"

	"github.com/ambientkit/ambientkit/examples/internal/cli"
	"github.com/ambientkit/ambientkit/examples/internal/cli/clitest"
)

// TestTheCLIContract runs the contract every example keeps (clitest.Rows), and this one's own rows
// of bad input, against migrate-namespace.
func TestTheCLIContract(t *testing.T) {
	rows := append(clitest.Rows("--namespace", "shop"), []clitest.Row{
		{Name: "a namespace name that is none is refused", Args: []string{"--demo", "--namespace", "Shop_1"}, Code: cli.ExitUsage, Want: []string{`--namespace "Shop_1" is not a valid name`}},
		{Name: "an apply of an object no proposal replaces is refused", Args: []string{"--demo", "--namespace", "shop", "--apply", "Foo/bar"}, Code: cli.ExitUsage,
			Want: []string{"--apply Foo/bar"}},
		{Name: "the old rollback spelling names the new one", Args: []string{"--context", "prod", "--namespace", "shop", "--rollback-to", "waypoint"}, Code: cli.ExitUsage,
			Want: []string{"--rollback-to is now --rollback STEP", "--rollback waypoint"}},
		{Name: "a namespace is required", Args: []string{"--demo"}, Code: cli.ExitUsage, Want: []string{"--namespace is required"}},
	}...)
	clitest.Contract(t, "migrate-namespace", run, rows)
	clitest.Outputs(t, "migrate-namespace", run, "--demo", "--namespace", "shop")
	clitest.Verdicts(t, "migrate-namespace", run, clitest.Demo, "--namespace", "shop")
}
