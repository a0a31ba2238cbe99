package ambientkit_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// plannerPackages must stay pure: snapshot and options in, plan and findings out.
var plannerPackages = []string{
	"github.com/ambientkit/ambientkit/ambient",
	"github.com/ambientkit/ambientkit/ambient/mesh",
	"github.com/ambientkit/ambientkit/ambient/plan",
	"github.com/ambientkit/ambientkit/ambient/steps",
	"github.com/ambientkit/ambientkit/revision",
	"github.com/ambientkit/ambientkit/cni",
	"github.com/ambientkit/ambientkit/ztunnel",
	"github.com/ambientkit/ambientkit/tags",
	"github.com/ambientkit/ambientkit/migrate",
}

// forbiddenDeps may not appear anywhere in a planner's dependency closure.
var forbiddenDeps = []string{
	"k8s.io/client-go/kubernetes",
	"k8s.io/client-go/rest",
	"sigs.k8s.io/controller-runtime/pkg/client",
	"helm.sh/helm/v3/pkg/action",
	"net/http",
}

// forbiddenImports may not be imported directly by a planner: no clock, randomness, files or network.
var forbiddenImports = []string{"os", "math/rand", "math/rand/v2", "crypto/rand", "net", "io/fs", "syscall"}

func TestPlannersArePure(t *testing.T) {
	out, err := exec.Command("go", append([]string{"list", "-json=ImportPath,Deps,Imports,GoFiles"}, plannerPackages...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Deps       []string
			Imports    []string
			GoFiles    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		seen++
		for _, d := range p.Deps {
			for _, f := range forbiddenDeps {
				if d == f || strings.HasPrefix(d, f+"/") {
					t.Errorf("planner package %s depends on %s; planners take a snapshot, never a client", p.ImportPath, d)
				}
			}
		}
		for _, i := range p.Imports {
			for _, f := range forbiddenImports {
				if i == f {
					t.Errorf("planner package %s imports %s; planners read no clock, files, network or randomness", p.ImportPath, i)
				}
			}
		}
		if len(p.GoFiles) == 0 {
			t.Errorf("planner package %s has no code", p.ImportPath)
		}
	}
	if seen != len(plannerPackages) {
		t.Fatalf("go list returned %d packages, want %d", seen, len(plannerPackages))
	}
}

func TestPlannersReadNoClock(t *testing.T) {
	// Only each planner package's own files: sub-packages such as ambient/execute may read a clock.
	out, err := exec.Command("go", append([]string{"list", "-f", `{{range .GoFiles}}{{$.Dir}}/{{.}} {{end}}`}, plannerPackages...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	files := strings.Fields(string(out))
	if len(files) == 0 {
		t.Fatal("go list returned no files")
	}
	grep := exec.Command("grep", append([]string{"-nE", `time\.(Now|Since|Until|Sleep|After|Tick|NewTimer|NewTicker)\b`}, files...)...)
	if b, _ := grep.Output(); len(b) > 0 {
		t.Errorf("planner code reads the clock:\n%s", b)
	}
}
