package ambientkit_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// plannerPackages must stay pure: snapshot and options in, plan and findings out.
var plannerPackages = []string{
	"github.com/ambientkit/ambientkit/ambient",
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh",
	"github.com/ambientkit/ambientkit/ambient/vocab/plan",
	"github.com/ambientkit/ambientkit/ambient/vocab/plan/runbook",
	"github.com/ambientkit/ambientkit/ambient/vocab/plan/estimate",
	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/nodename",
	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/words",
	"github.com/ambientkit/ambientkit/ambient/vocab/steps",
	"github.com/ambientkit/ambientkit/revision",
	"github.com/ambientkit/ambientkit/cni",
	"github.com/ambientkit/ambientkit/ztunnel",
	"github.com/ambientkit/ambientkit/tags",
	"github.com/ambientkit/ambientkit/migrate",
	"github.com/ambientkit/ambientkit/ambient/knowledge/advisories",
	"github.com/ambientkit/ambientkit/ambient/knowledge/compat",
	"github.com/ambientkit/ambientkit/ambient/knowledge/releases",
}

// primitives are the packages whose exported planners a caller runs; every package of this module
// they depend on must be in plannerPackages (TestEveryPackageAPlannerUsesIsHeldPure).
var primitives = []string{"./ambient", "./revision", "./ztunnel", "./cni", "./tags", "./migrate"}

// fileLoaders are planner packages that hold data a caller may replace with a file of their own:
// they may import os, and use it only to read that file in the functions listed
// (TestFileLoadersReadOnlyWhenAsked checks it). Nothing else in them touches the file system.
var fileLoaders = map[string][]string{
	"github.com/ambientkit/ambientkit/ambient/knowledge/advisories": {"LoadFile"},
	"github.com/ambientkit/ambientkit/ambient/knowledge/releases":   {"LoadFile", "LoadHelmIndexFile"},
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
				if i == f && !(f == "os" && fileLoaders[p.ImportPath] != nil) {
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

func TestEveryPackageAPlannerUsesIsHeldPure(t *testing.T) {
	out, err := exec.Command("go", append([]string{"list", "-deps"}, primitives...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	n := 0
	for _, dep := range strings.Fields(string(out)) {
		if !strings.HasPrefix(dep, "github.com/ambientkit/ambientkit/") {
			continue
		}
		n++
		if !contains(plannerPackages, dep) {
			t.Errorf("the planners depend on %s, which plannerPackages leaves out: hold it pure too (add it)", dep)
		}
	}
	if n < len(primitives) {
		t.Fatalf("go list -deps named %d packages of this module, want at least the %d primitives", n, len(primitives))
	}
}

// TestEveryPlannerOpensItsPlanWithBegin: a plan made anywhere but plan.Begin could lack the
// snapshot's fingerprint, and the executor would then have nothing to find a stale plan by.
func TestEveryPlannerOpensItsPlanWithBegin(t *testing.T) {
	out, err := exec.Command("go", append([]string{"list", "-f", `{{range .GoFiles}}{{$.Dir}}/{{.}} {{end}}`}, plannerPackages...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	files := strings.Fields(string(out))
	for _, name := range files {
		if strings.Contains(name, "/ambient/vocab/plan/") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "New" {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "plan" {
					t.Errorf("%s: plan.New in a planner; open the plan with plan.Begin(snapshot, metadata)", fset.Position(sel.Pos()))
				}
			}
			return true
		})
	}
	if len(files) < 20 {
		t.Fatalf("read %d planner files, want the planners' (20 or more)", len(files))
	}
}

func TestPlannersReadNoClock(t *testing.T) {
	// Only each planner package's own files: sub-packages such as ambient/io/execute may read a clock.
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

func TestFileLoadersReadOnlyWhenAsked(t *testing.T) {
	for pkg, allowed := range fileLoaders {
		out, err := exec.Command("go", "list", "-f", `{{.Dir}}{{range .GoFiles}} {{.}}{{end}}`, pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		fields := strings.Fields(string(out))
		dir, files := fields[0], fields[1:]
		for _, name := range files {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			osName := ""
			for _, imp := range f.Imports {
				if path, _ := strconv.Unquote(imp.Path.Value); path == "os" {
					osName = "os"
					if imp.Name != nil {
						osName = imp.Name.Name
					}
				}
			}
			if osName == "" {
				continue
			}
			for _, decl := range f.Decls {
				fn, isFunc := decl.(*ast.FuncDecl)
				ast.Inspect(decl, func(n ast.Node) bool {
					sel, ok := n.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == osName {
						inAllowed := isFunc && fn.Recv == nil && contains(allowed, fn.Name.Name)
						if sel.Sel.Name != "ReadFile" && sel.Sel.Name != "Open" || !inAllowed {
							t.Errorf("%s: %s.%s outside %v; a data package reads only the file its caller names",
								fset.Position(sel.Pos()), osName, sel.Sel.Name, allowed)
						}
					}
					return true
				})
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
