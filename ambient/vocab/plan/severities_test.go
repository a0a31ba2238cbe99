package plan_test

import (
	"go/ast"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

func TestEveryCodeDeclaresTheSeveritiesItsFindingsAreRaisedWith(t *testing.T) {
	for _, c := range plan.AllCodes() {
		s := plan.CodeSeverities(c)
		if len(s) == 0 {
			t.Errorf("%s has no severities in codeSeverities (severities_table.go): add the ones its findings are raised with", c)
		}
		for i := 1; i < len(s); i++ {
			if rankOf(s[i-1]) >= rankOf(s[i]) {
				t.Errorf("%s: severities %v are not in the order blocking, waivable, info", c, s)
			}
		}
		if plan.CodeWaivable(c) != strings.Contains(plan.CodeSeverityLabel(c), "waivable") {
			t.Errorf("%s: CodeWaivable %v disagrees with its label %q", c, plan.CodeWaivable(c), plan.CodeSeverityLabel(c))
		}
	}
	if plan.CodeSeverities("NO_SUCH_CODE") != nil || plan.CodeWaivable("NO_SUCH_CODE") || plan.CodeRaisedAs("NO_SUCH_CODE", plan.Info) {
		t.Error("an unknown code has severities")
	}
	if !plan.CodeRaisedAs(plan.CodePDBBlocksDrain, plan.Info) {
		t.Error("a waivable code the plan resolves is not allowed to be info")
	}
	if plan.CodeRaisedAs(plan.CodePDBBlocksDrain, plan.Blocking) || !plan.CodeWaivable(plan.CodePDBBlocksDrain) {
		t.Errorf("PDB_BLOCKS_DRAIN is raised waivable only, the table says %v", plan.CodeSeverities(plan.CodePDBBlocksDrain))
	}
	if plan.CodeWaivable(plan.CodeIstiodMissing) || plan.CodeWaivable(plan.CodeUpgradeChained) {
		t.Error("a blocking-only or info-only code is said to be waivable")
	}
}

func rankOf(s plan.Severity) int {
	return map[plan.Severity]int{plan.Blocking: 0, plan.Waivable: 1, plan.Info: 2}[s]
}

// raised is one place in the module's source that raises a finding of a code.
type raised struct {
	code, severity string // constant names; severity "" when computed
	at             string
}

// TestThePlannersRaiseEveryCodeOnlyWithTheSeveritiesItDeclares walks the module's non-test source for
// findings built with a code constant (plan.Finding{Code: plan.CodeX, Severity: plan.Y}, or
// f.Code, f.Severity = plan.CodeX, plan.Y) and holds each literal severity to the code's table; a
// computed one is held by the golden and corpus tests, which check every finding a plan carries. A
// code no source raises is dead: --list-codes would promise a finding that never comes.
func TestThePlannersRaiseEveryCodeOnlyWithTheSeveritiesItDeclares(t *testing.T) {
	names := map[string]plan.Code{} // constant name → code, from the declarations of every package
	var found []raised
	err := walkModuleSource(func(path string, fset *token.FileSet, f *ast.File) {
		codeConstants(f, func(name *ast.Ident, value string) { names[name.Name] = plan.Code(value) })
		// The files that declare codes (plan's codes*.go and severities*.go, migrate/codes.go) do not
		// raise them.
		declares := strings.HasPrefix(filepath.Base(path), "codes") || f.Name.Name == "plan" && strings.HasPrefix(filepath.Base(path), "severities")
		ast.Inspect(f, func(n ast.Node) bool {
			if n == nil {
				return false
			}
			at := fset.Position(n.Pos()).String()
			switch n := n.(type) {
			case *ast.CompositeLit:
				var r raised
				for _, e := range n.Elts {
					kv, ok := e.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					switch key, _ := kv.Key.(*ast.Ident); {
					case key == nil:
					case key.Name == "Code":
						r.code = constName(kv.Value)
					case key.Name == "Severity":
						r.severity = constName(kv.Value)
					}
				}
				if strings.HasPrefix(r.code, "Code") && !declares {
					r.at = at
					found = append(found, r)
				}
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					sel, ok := l.(*ast.SelectorExpr)
					if !ok || sel.Sel.Name != "Code" || len(n.Rhs) != len(n.Lhs) {
						continue
					}
					r := raised{code: constName(n.Rhs[i]), at: at}
					for j, l2 := range n.Lhs {
						if s, ok := l2.(*ast.SelectorExpr); ok && s.Sel.Name == "Severity" {
							r.severity = constName(n.Rhs[j])
						}
					}
					if strings.HasPrefix(r.code, "Code") && !declares {
						found = append(found, r)
					}
				}
			case *ast.SelectorExpr:
				// A code passed along by name (code := plan.CodeX; ...Code: code) counts as raised.
				if _, ok := n.X.(*ast.Ident); ok && strings.HasPrefix(n.Sel.Name, "Code") && !declares {
					found = append(found, raised{code: n.Sel.Name, severity: "?", at: at})
				}
			case *ast.Ident:
				// So does one of the package that declares it, named without its package.
				if strings.HasPrefix(n.Name, "Code") && n.Name != "Code" && !declares {
					found = append(found, raised{code: n.Name, severity: "?", at: at})
				}
			}
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 100 {
		t.Fatalf("read %d code constants from the module, want all of them (100 or more)", len(names))
	}
	used := map[plan.Code]bool{}
	checked := 0
	for _, r := range found {
		c, ok := names[r.code]
		if !ok {
			continue // a Code field of another type (a step's, a finding's copy)
		}
		used[c] = true
		sev := map[string]plan.Severity{"Blocking": plan.Blocking, "Waivable": plan.Waivable, "Info": plan.Info}[r.severity]
		if sev == "" {
			continue
		}
		checked++
		if !contains(plan.CodeSeverities(c), sev) {
			t.Errorf("%s raises %s as %s, but its table says %v: add it to severities_table.go, or fix the finding", r.at, c, sev, plan.CodeSeverities(c))
		}
	}
	if checked < 100 {
		t.Errorf("checked %d literal severities, want the planners' (100 or more): is the walk reading the source?", checked)
	}
	var dead []string
	for _, c := range plan.AllCodes() {
		if !used[c] {
			dead = append(dead, string(c))
		}
	}
	sort.Strings(dead)
	if len(dead) > 0 {
		t.Errorf("no source raises %v: remove the code, or raise it", dead)
	}
}

func contains(ss []plan.Severity, s plan.Severity) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// constName is the name of a constant written as plan.X or X, "" for anything else.
func constName(e ast.Expr) string {
	switch v := e.(type) {
	case *ast.SelectorExpr:
		return v.Sel.Name
	case *ast.Ident:
		return v.Name
	}
	return ""
}
