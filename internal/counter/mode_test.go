package counter

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxModeBranches bounds the places outside this package that branch on a
// counter's mode (docs/development.md, "A new way of counting"): one a
// layer, each a switch that picks what the mode does there.
const maxModeBranches = 12

// TestModeIsBranchedOnInFewPlaces counts, in the product's Go code outside
// this package, the if, switch, && and || whose condition looks at a
// counter's mode (Mode, its methods and values, or a kind's options that
// decide it), and fails past maxModeBranches: a new way of counting then
// touches a switch a layer, not every rule that reads a flag.
func TestModeIsBranchedOnInFewPlaces(t *testing.T) {
	sites := modeBranches(t, "../..")
	for _, s := range sites {
		t.Log(s)
	}
	if len(sites) > maxModeBranches {
		t.Errorf("%d places branch on a counter's mode, at most %d: decide it in the layer's one switch (or a Mode method here)", len(sites), maxModeBranches)
	}
}

// modeBranches lists the branches on a counter's mode in the Go files
// under root, outside this package, tests, the load generator and the Go
// client.
func modeBranches(t *testing.T, root string) []string {
	t.Helper()
	var sites []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// The Go client (client/) forwards what its caller chose.
			rel, _ := filepath.Rel(root, path)
			if d.Name() == "node_modules" || d.Name() == ".git" || slices.Contains([]string{"internal/counter", "cmd/loadgen", "e2e/loadgen", "client"}, filepath.ToSlash(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var cond []ast.Expr
			switch n := n.(type) {
			case *ast.IfStmt:
				cond = []ast.Expr{n.Cond}
			case *ast.SwitchStmt:
				if n.Tag != nil {
					cond = []ast.Expr{n.Tag}
				}
				for _, c := range n.Body.List {
					cond = append(cond, c.(*ast.CaseClause).List...)
				}
			case *ast.BinaryExpr:
				if n.Op == token.LAND || n.Op == token.LOR {
					cond = []ast.Expr{n}
				}
			default:
				return true
			}
			if slices.ContainsFunc(cond, looksAtMode) {
				sites = append(sites, fmt.Sprint(fset.Position(n.Pos())))
				return false // one site, whatever it holds
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sites
}

// looksAtMode reports whether e reads a counter's mode: Mode, a method of
// it, one of its values, a kind's option that decides it (a request's
// unique too), or a counter's or kind's choices.
func looksAtMode(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if n, ok := n.(*ast.SelectorExpr); ok {
			x, _ := n.X.(*ast.Ident)
			switch n.Sel.Name {
			case "Mode", "JoinOnly", "Distinct", "Unique", "Choices":
				found = true // a Counter's Mode or choices, a Kind's Mode() or options, a request's unique
			case "Plain", "Choice":
				found = x != nil && x.Name == "counter"
			}
		}
		return !found
	})
	return found
}
