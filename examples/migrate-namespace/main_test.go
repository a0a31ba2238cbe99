package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// TestFromDirReportsAndPlansWithoutApplying runs the example over the migrate package's fixtures.
func TestFromDirReportsAndPlansWithoutApplying(t *testing.T) {
	dir := t.TempDir()
	var dump []byte
	for _, f := range []string{"../../migrate/testdata/base.yaml", "../../migrate/testdata/migrate/checkout.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dump = append(append(dump, b...), []byte("\n---\n")...)
	}
	if err := os.WriteFile(filepath.Join(dir, "dump.yaml"), dump, 0o600); err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(dir, "plan.yaml")
	args := []string{"--from-dir", dir, "--namespace", "checkout", "--waypoint", "waypoint", "--apply", "all",
		"--delete", "DestinationRule/web", "--backup", filepath.Join(dir, "backup.json")}
	t.Chdir(dir)
	var out bytes.Buffer
	if err := run(context.Background(), args, strings.NewReader(""), &out, io.Discard); err != nil {
		t.Fatalf("migrate-namespace --from-dir: %v", err)
	}
	if !strings.HasPrefix(out.String(), "Source: the dump in folder "+dir) {
		t.Errorf("the output does not open with its source:\n%s", out.String())
	}
	if _, err := os.Stat("migrate.plan.yaml"); !os.IsNotExist(err) {
		t.Errorf("planning from a dump without --plan-file wrote the default plan file: %v", err)
	}
	if err := run(context.Background(), append(args, "--plan-file", planFile), strings.NewReader(""), io.Discard, io.Discard); err != nil {
		t.Fatalf("migrate-namespace --from-dir --plan-file: %v", err)
	}
	b, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Runnable() || len(p.Steps) != 18 {
		t.Fatalf("plan: runnable %v, %d steps; want a runnable plan of 18 steps (the deny window's approval included)", p.Runnable(), len(p.Steps))
	}
	if _, ok := p.Step("migrate/checkout/delete/destinationrule/web"); !ok {
		t.Error("the DestinationRule named with --delete is not deleted")
	}
	if _, err := os.Stat(filepath.Join(dir, "backup.json")); !os.IsNotExist(err) {
		t.Error("planning from files wrote the backup")
	}
}
