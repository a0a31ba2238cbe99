//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestTheREADMEsLabClusterBlockRunsAsWritten runs the README's block that brings up the lab
// cluster with the demo mesh (hack/e2e-cluster.sh up --demo), plans it live and takes it down,
// verbatim with bash from the repository root, in a cluster folder and name of its own beside the
// suites' cluster. The plan of the live demo mesh ends as the README's quick start says the demo's
// does (exit status 4, PDB_BLOCKS_DRAIN), and down leaves no cluster folder behind.
func TestTheREADMEsLabClusterBlockRunsAsWritten(t *testing.T) {
	if os.Getenv("E2E_BIN_DIR") == "" {
		t.Fatal("E2E_BIN_DIR is not set: run the e2e through hack/e2e.sh, which builds the cluster binaries")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var block string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(readme), -1) {
		if strings.Contains(m[1], "e2e-cluster.sh up --demo") {
			block = m[1]
		}
	}
	if block == "" || !strings.Contains(block, "e2e-cluster.sh down") {
		t.Fatal("the README has no sh block that brings up the lab cluster with --demo and takes it down")
	}
	dir := filepath.Join(t.TempDir(), "lab")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "-c", block)
	sh.Dir = root
	sh.Env = append(os.Environ(), "E2E_CLUSTER_DIR="+dir, "E2E_CLUSTER_NAME=ambientkit-readme-lab")
	out, err := sh.CombinedOutput()
	h.Logf("README lab block: %v\n%s", err, tail(string(out), 40))
	if err != nil {
		t.Errorf("the README's lab block ends with %v (its last command, down, failed):\n%s", err, tail(string(out), 80))
	}
	for _, want := range []string{"Source: the live cluster", "PDB_BLOCKS_DRAIN", "exit status 4"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the README's lab block prints no %q:\n%s", want, tail(string(out), 80))
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("down left the cluster folder %s behind (%v)", dir, err)
		down := exec.Command("bash", filepath.Join(root, "hack", "e2e-cluster.sh"), "down")
		down.Env = sh.Env
		_ = down.Run()
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
