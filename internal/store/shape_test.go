package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxStoreMethods bounds a store's exported methods: a store that needs
// more holds more than one concern (docs/development.md).
const maxStoreMethods = 20

// TestNoStoreIsAHub counts the exported methods of each type in the
// stores below (tests aside), and fails past maxStoreMethods.
func TestNoStoreIsAHub(t *testing.T) {
	dirs, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	methods := map[string]int{}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(d.Name(), "*.go"))
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Recv == nil || !fn.Name.IsExported() {
					continue
				}
				recv := fn.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					methods[d.Name()+"."+id.Name]++
				}
			}
		}
	}
	if methods["counterstore.Store"] == 0 {
		t.Fatal("found no methods of counterstore.Store: the walk looks in the wrong place")
	}
	for typ, n := range methods {
		if n > maxStoreMethods {
			t.Errorf("%s has %d exported methods, at most %d: split it by concern", typ, n, maxStoreMethods)
		}
	}
}
