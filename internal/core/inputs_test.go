package core

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// wallClock are the time package's functions that read the wall clock or
// wait on it.
var wallClock = []string{"Now", "Since", "Until", "After", "AfterFunc", "Sleep", "Tick", "NewTimer", "NewTicker"}

// TestTheCoreHasNoHiddenInputs: the core reads the clock it is given,
// never the wall clock, and counts through the Metrics it declares, so
// neither telemetry nor its exporters are in its build, nor Firestore's
// client (docs/development.md).
func TestTheCoreHasNoHiddenInputs(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no Go files here: the test looks in the wrong place")
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "time" && slices.Contains(wallClock, sel.Sel.Name) {
					t.Errorf("%s: time.%s in the core: read core.now, the clock it is given", fset.Position(n.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		// The OpenTelemetry API is the one spans are started with; its
		// SDK and exporters come only with the service's telemetry, and
		// Firestore's client (gRPC with it) only with the stores.
		switch {
		case pkg == "github.com/shardcount/shardcount/internal/telemetry" || strings.HasPrefix(pkg, "go.opentelemetry.io/otel/sdk") ||
			strings.HasPrefix(pkg, "go.opentelemetry.io/otel/exporters/"):
			t.Errorf("the core depends on %s: count through core.Metrics", pkg)
		case strings.HasPrefix(pkg, "cloud.google.com/go/firestore") || strings.HasPrefix(pkg, "google.golang.org/grpc"):
			t.Errorf("the core depends on %s: it knows no Firestore, only the interfaces it declares", pkg)
		}
	}
}
