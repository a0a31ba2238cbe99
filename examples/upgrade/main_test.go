package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/examples/internal/cli"
)

func runUpgrade(args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	err = run(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestHelpDocumentsTheFlagsAndExitCodes(t *testing.T) {
	out, _, err := runUpgrade("--help")
	if cli.ExitCode(err) != cli.ExitOK {
		t.Fatalf("--help: %v", err)
	}
	for _, want := range []string{"--charts DIR|URL|oci://REF", "--rollback STEP", "--saved", "--resume", "--log-format text|json", "--dry-run",
		"example: upgrade --rollback cni/upgrade", "  3  blocked", "  4  not runnable until waived", "kubectl get events -n istio-system"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	if strings.Contains(out, "--from-dir") {
		t.Error("upgrade applies to a live cluster; --help should not offer --from-dir")
	}
}

func TestFlagsAreCheckedBeforeTheClusterIsContacted(t *testing.T) {
	nowhere := filepath.Join(t.TempDir(), "no-kubeconfig")
	for _, args := range [][]string{
		{"--saved", "--resume"},
		{"--resume", "--rollback", "cni/upgrade"},
		{"--ztunnel", "in-place", "--drain-timeout", "1m"},
		{"--log-format", "xml"},
		{"--charts", "ftp://mirror/istio"},
		{"--from-dir", "dump"},
	} {
		if _, _, err := runUpgrade(append(args, "--kubeconfig", nowhere)...); cli.ExitCode(err) != cli.ExitUsage {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
	if _, _, err := runUpgrade("--kubeconfig", nowhere, "--target", "1.31.4"); cli.ExitCode(err) != cli.ExitUsage || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Errorf("a missing kubeconfig: %v, want a usage error naming --kubeconfig", err)
	}
}
