package ambientkit_test

import (
	"encoding/json"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/ambientkit/ambientkit"

// allowedImports states, for every package of the module, which of the module's packages it may
// import (directly). The directions are the design's (docs/design.md, "Layers"):
//
//	vocabulary   ambient/vocab/mesh ← ambient/vocab/plan ← ambient/vocab/plan/rbac, ambient/vocab/plan/estimate ← ambient/vocab/plan/runbook;
//	             ambient/knowledge/releases, ambient/knowledge/advisories
//	shared       ambient/vocab/steps (the plan Builder) ← ambient/knowledge/compat (the gate every primitive runs)
//	planners     tags ← revision; cni, ztunnel, migrate (each runs the gate) ← ambient (composes them)
//	executor     ambient/io/observe, ambient/io/execute (+ helmsdk): vocabulary only, never a planner;
//	             the gates reach the executor as plan.Gates values (ambient.Gates)
//	programs     examples, e2e: anything public
//
// A package missing from the table, or an import the table does not allow, fails the test: a new
// package states its place here, and an upward import (a planner importing the executor, the
// executor importing a planner, the gate importing a planner) is refused.
var allowedImports = map[string][]string{
	"":                                     {},
	"ambient/vocab/mesh":                   {},
	"internal/helmrecord":                  {},
	"internal/corpustest":                  {"ambient/vocab/mesh", "ambient/io/observe", "ambient/io/demo"},
	"ambient/io/internal/affinity":         {"ambient/vocab/mesh"},
	"ambient/vocab/mesh/meshtest":          {"ambient/vocab/mesh"},
	"ambient/vocab/plan/internal/nodename": {},
	"ambient/vocab/plan/internal/words":    {},
	"ambient/vocab/plan":                   {"ambient/vocab/mesh", "ambient/vocab/plan/internal/nodename", "ambient/vocab/plan/internal/words"},
	"ambient/vocab/plan/internal/plantest": {"ambient/vocab/mesh", "ambient/vocab/plan"},
	"ambient/vocab/plan/rbac":              {"ambient/vocab/mesh", "ambient/vocab/plan"},
	"ambient/vocab/plan/estimate":          {"ambient/vocab/plan", "ambient/vocab/plan/internal/words"},
	"ambient/vocab/plan/runbook":           {"ambient/vocab/mesh", "ambient/vocab/plan", "ambient/vocab/plan/estimate", "ambient/vocab/plan/internal/nodename", "ambient/vocab/plan/internal/words"},
	"ambient/knowledge/releases":           {"ambient/vocab/mesh"},
	"ambient/knowledge/advisories":         {"ambient/vocab/mesh"},
	"ambient/vocab/steps":                  {"ambient/vocab/mesh", "ambient/vocab/plan"},
	"ambient/knowledge/compat":             {"ambient/vocab/mesh", "ambient/vocab/plan", "ambient/vocab/plan/runbook", "ambient/knowledge/releases", "ambient/knowledge/advisories", "ambient/vocab/steps"},
	"tags":                                 {"ambient/vocab/mesh", "ambient/vocab/plan", "ambient/knowledge/releases", "ambient/vocab/steps", "ambient/knowledge/compat"},
	"revision":                             {"ambient/vocab/mesh", "ambient/knowledge/advisories", "ambient/vocab/plan", "ambient/vocab/steps", "ambient/knowledge/compat", "tags"},
	"cni":                                  {"ambient/vocab/mesh", "ambient/vocab/plan", "ambient/vocab/steps", "ambient/knowledge/compat"},
	"ztunnel":                              {"ambient/vocab/mesh", "ambient/vocab/plan", "ambient/knowledge/releases", "ambient/vocab/steps", "ambient/knowledge/compat"},
	"migrate":                              {"ambient/vocab/mesh", "ambient/vocab/plan", "ambient/knowledge/releases", "ambient/knowledge/compat"},
	"ambient": {"ambient/vocab/mesh", "ambient/vocab/plan", "ambient/knowledge/releases", "ambient/knowledge/advisories", "ambient/vocab/steps", "ambient/knowledge/compat",
		"tags", "revision", "cni", "ztunnel"},
	"ambient/io/observe":             {"ambient/vocab/mesh", "ambient/vocab/plan", "ambient/vocab/plan/rbac", "ambient/io/internal/affinity", "internal/helmrecord"},
	"ambient/io/demo":                {"ambient/vocab/mesh", "ambient/io/observe"},
	"ambient/io/execute":             {"ambient/vocab/mesh", "ambient/vocab/plan", "ambient/vocab/plan/rbac", "ambient/io/internal/affinity"},
	"ambient/io/execute/helmsdk":     {"ambient/vocab/mesh", "ambient/vocab/plan", "ambient/io/execute"},
	"ambient/io/execute/executetest": {"ambient/vocab/mesh", "ambient/vocab/plan", "ambient/vocab/plan/rbac", "ambient/io/internal/affinity", "ambient/io/observe", "ambient/io/execute", "ambient", "internal/helmrecord"},
	"examples":                       {},
	"examples/internal/cli":          {"*public"},
	"examples/internal/cli/clitest":  {"*public", "examples/internal/cli"},
	"examples/plan-upgrade":          {"*public", "examples/internal/cli"},
	"examples/upgrade":               {"*public", "examples/internal/cli"},
	"examples/move-tag":              {"*public", "examples/internal/cli"},
	"examples/migrate-namespace":     {"*public", "examples/internal/cli"},
	"examples/bluegreen-ztunnel":     {"*public", "examples/internal/cli"},
	"tools":                          {},
	"hack/advisories":                {"ambient/vocab/mesh", "ambient/knowledge/advisories"},
}

// isPublic reports whether an import path is part of the module's public API: no internal package,
// no example and no test program.
func isPublic(rel string) bool {
	return !strings.Contains("/"+rel+"/", "/internal/") && !strings.HasPrefix(rel, "examples") && !strings.HasPrefix(rel, "e2e") &&
		!strings.HasPrefix(rel, "hack")
}

type listedPackage struct {
	ImportPath string
	Imports    []string
}

func listPackages(t *testing.T, args ...string) []listedPackage {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-json=ImportPath,Imports"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// layerViolations returns, for each package, the module imports the table does not allow.
func layerViolations(pkgs []listedPackage, allowed map[string][]string) []string {
	var bad []string
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if strings.HasPrefix(rel, "e2e") {
			continue // the e2e suites and their programs may use anything
		}
		allow, ok := allowed[rel]
		if !ok {
			bad = append(bad, "package "+rel+" has no entry in allowedImports; add it with the module packages it may import")
			continue
		}
		set := map[string]bool{}
		public := false
		for _, a := range allow {
			if a == "*public" {
				public = true
			}
			set[a] = true
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			irel := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			if set[irel] || public && isPublic(irel) {
				continue
			}
			bad = append(bad, "package "+rel+" imports "+irel+", which allowedImports does not allow")
		}
	}
	sort.Strings(bad)
	return bad
}

func TestPackagesImportOnlyInTheAllowedDirections(t *testing.T) {
	pkgs := listPackages(t, "./...")
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; the module has more", len(pkgs))
	}
	for _, v := range layerViolations(pkgs, allowedImports) {
		t.Error(v)
	}
}

// TestTheLayerRuleRefusesAnUpwardImport shows the rule can fail: the executor importing a planner,
// a planner importing the executor and the gate importing a planner are each reported.
func TestTheLayerRuleRefusesAnUpwardImport(t *testing.T) {
	pkgs := []listedPackage{
		{ImportPath: module + "/ambient/io/execute", Imports: []string{module + "/ambient/vocab/plan", module + "/ambient"}},
		{ImportPath: module + "/ztunnel", Imports: []string{module + "/ambient/io/execute"}},
		{ImportPath: module + "/ambient/knowledge/compat", Imports: []string{module + "/revision"}},
		{ImportPath: module + "/newpkg"},
	}
	got := layerViolations(pkgs, allowedImports)
	want := []string{
		"package ambient/io/execute imports ambient, which allowedImports does not allow",
		"package ambient/knowledge/compat imports revision, which allowedImports does not allow",
		"package newpkg has no entry in allowedImports; add it with the module packages it may import",
		"package ztunnel imports ambient/io/execute, which allowedImports does not allow",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
