package plan_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// TestEveryCodeConstantReadsLikeItsString walks the module's Go files for finding code constants
// (of type Code or plan.Code) and holds each name equal to its string, words joined: CodeTargetOlderThanCurrent
// is "TARGET_OLDER_THAN_CURRENT". A reader of the code then knows the string a user waives, and
// the other way round.
func TestEveryCodeConstantReadsLikeItsString(t *testing.T) {
	seen := 0
	err := walkModuleSource(func(path string, fset *token.FileSet, f *ast.File) {
		codeConstants(f, func(name *ast.Ident, value string) {
			seen++
			if !strings.HasPrefix(name.Name, "Code") || strings.ToUpper(strings.TrimPrefix(name.Name, "Code")) != strings.ReplaceAll(value, "_", "") {
				t.Errorf("%s: constant %s is %q: name it Code + the string's words (or the string after the name)", fset.Position(name.Pos()), name.Name, value)
			}
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 100 {
		t.Fatalf("found %d code constants in the module, want every one (is the walk wrong?)", seen)
	}
}

// TestEveryCodeConstantIsInTheCatalog holds the catalog (AllCodes, CodeHelp, what --list-codes
// prints) to the code constants the module declares: a constant whose code has no help would be raised
// but never listed, and a catalog entry with no constant is a code no Go caller can name.
func TestEveryCodeConstantIsInTheCatalog(t *testing.T) {
	declared := map[plan.Code]string{}
	err := walkModuleSource(func(path string, fset *token.FileSet, f *ast.File) {
		codeConstants(f, func(name *ast.Ident, value string) {
			declared[plan.Code(value)] = fset.Position(name.Pos()).String()
			if !plan.KnownCode(plan.Code(value)) || strings.TrimSpace(plan.CodeHelp(plan.Code(value))) == "" {
				t.Errorf("%s: %s (%q) is not in the catalog with its help: register it beside its constant", fset.Position(name.Pos()), name.Name, value)
			}
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range plan.AllCodes() {
		if _, ok := declared[c]; !ok {
			t.Errorf("the catalog has %s, which no constant declares", c)
		}
		if strings.ToUpper(string(c)) != string(c) {
			t.Errorf("code %q is not upper case", c)
		}
	}
	if len(declared) < 100 || len(declared) != len(plan.AllCodes()) {
		t.Errorf("%d code constants, %d codes in the catalog: want the same, 100 or more", len(declared), len(plan.AllCodes()))
	}
}

// codeConstants hands fn each constant of type Code or plan.Code that f declares with a string.
func codeConstants(f *ast.File, fn func(name *ast.Ident, value string)) {
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			if !isCodeType(vs.Type) {
				continue
			}
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					break
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					value, _ := strconv.Unquote(lit.Value)
					fn(name, value)
				}
			}
		}
	}
}

// isCodeType reports whether the type expression is Code or plan.Code.
func isCodeType(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name == "Code"
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.Name == "plan" && x.Sel.Name == "Code"
	}
	return false
}

// walkModuleSource parses every non-test Go file of the module (testdata, e2e and hidden folders
// apart) and hands each to fn.
func walkModuleSource(fn func(path string, fset *token.FileSet, f *ast.File)) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	for { // the module's root: the folder of its go.mod
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(root)
		if up == root {
			return errors.New("no go.mod above the working directory")
		}
		root = up
	}
	fset := token.NewFileSet()
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "e2e" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		fn(path, fset, f)
		return nil
	})
}
