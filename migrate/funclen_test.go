package migrate_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of the library may be (tests excepted).
const maxFuncLines = 100

// TestNoFunctionIsLongerThanAHundredLines reads the package's own sources: a planner whose steps
// all live in one function (build was 208 lines, translateHTTP 167) hides the order it keeps.
func TestNoFunctionIsLongerThanAHundredLines(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fs := token.NewFileSet()
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fs, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			checked++
			if n := fs.Position(fd.End()).Line - fs.Position(fd.Pos()).Line + 1; n > maxFuncLines {
				t.Errorf("%s: %s is %d lines long; split it (at most %d)", f, fd.Name.Name, n, maxFuncLines)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d functions found: is the test running in the package directory?", checked)
	}
}
