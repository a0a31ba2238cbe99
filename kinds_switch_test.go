package ambientkit_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// stepKindSwitches returns where a switch statement of the Go source under root decides by a plan
// step's kind: a case naming a Kind constant (case plan.KindDrain), a case testing an action field
// (case s.Drain != nil), or a type switch on action payloads (case *plan.NodeDrain). What a kind
// means to a package is its entry in that package's kind table (plan's kindSpecs, runbook's,
// estimate's and rbac's kinds.go, the executor's actions), never a switch elsewhere.
func stepKindSwitches(t *testing.T, root string) []string {
	t.Helper()
	consts, fields, payloads := map[string]bool{}, map[string]bool{}, map[string]bool{}
	st := reflect.TypeOf(plan.Step{})
	for _, k := range plan.Kinds() {
		consts["Kind"+string(k)] = true
		fields[string(k)] = true
		if f, ok := st.FieldByName(string(k)); ok {
			payloads[f.Type.Elem().Name()] = true
		}
	}
	caseNamesKind := func(e ast.Expr) bool {
		found := false
		ast.Inspect(e, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if consts[n.Sel.Name] || payloads[n.Sel.Name] {
					found = true
				}
			case *ast.Ident:
				if consts[n.Name] {
					found = true
				}
			case *ast.BinaryExpr:
				if sel, ok := n.X.(*ast.SelectorExpr); ok && n.Op == token.NEQ && fields[sel.Sel.Name] {
					if y, ok := n.Y.(*ast.Ident); ok && y.Name == "nil" {
						found = true
					}
				}
			}
			return !found
		})
		return found
	}
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var body *ast.BlockStmt
			switch n := n.(type) {
			case *ast.SwitchStmt:
				body = n.Body
			case *ast.TypeSwitchStmt:
				body = n.Body
			default:
				return true
			}
			for _, c := range body.List {
				for _, e := range c.(*ast.CaseClause).List {
					if caseNamesKind(e) {
						out = append(out, fset.Position(n.Pos()).String())
						return true
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func TestNoSwitchOutsideTheKindTablesDecidesByAStepsKind(t *testing.T) {
	for _, at := range stepKindSwitches(t, ".") {
		t.Errorf("%s: a switch decides by a step's kind; put what the kind means into its entry of the package's kind table", at)
	}
}

// TestTheKindSwitchRuleFindsEachForm shows the rule can fail: each form of switch on a kind is
// reported, and a switch on something else is not.
func TestTheKindSwitchRuleFindsEachForm(t *testing.T) {
	dir := t.TempDir()
	src := `package x

import "github.com/ambientkit/ambientkit/ambient/vocab/plan"

func a(k plan.Kind) int {
	switch k {
	case plan.KindDrain:
		return 1
	}
	return 0
}

func b(s *plan.Step) int {
	switch {
	case s.HelmUpgrade != nil:
		return 1
	}
	return 0
}

func c(s *plan.Step) int {
	switch s.Action().(type) {
	case *plan.NodeDrain:
		return 1
	}
	return 0
}

func d(r plan.Risk) int {
	switch r {
	case plan.RiskHigh:
		return 1
	}
	return 0
}
`
	if err := writeFile(filepath.Join(dir, "x.go"), src); err != nil {
		t.Fatal(err)
	}
	got := stepKindSwitches(t, dir)
	if len(got) != 3 {
		t.Errorf("the rule reports %v; want the three switches on a kind (lines 6, 14, 22), not the one on a risk", got)
	}
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }
