package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// defaultMuxUses lists where a Go file serves or fills net/http's DefaultServeMux: the mux net/http/pprof registers
// its profiles on when libs/server's debug listener imports it. Nothing that ships may serve that mux, so the
// profiles stay on the loopback debug port (ZOEA_DEBUG_ADDR) and never appear on a service's or the console's port.
func defaultMuxUses(fset *token.FileSet, f *ast.File) []string {
	httpName := ""
	for _, imp := range f.Imports {
		if imp.Path.Value == `"net/http"` {
			httpName = "http"
			if imp.Name != nil {
				httpName = imp.Name.Name
			}
		}
	}
	if httpName == "" {
		return nil
	}
	isHTTP := func(e ast.Expr, names ...string) (string, bool) {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return "", false
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok || x.Name != httpName {
			return "", false
		}
		for _, n := range names {
			if sel.Sel.Name == n {
				return n, true
			}
		}
		return "", false
	}
	isNil := func(e ast.Expr) bool { id, ok := e.(*ast.Ident); return ok && id.Name == "nil" }
	var found []string
	add := func(n ast.Node, what string) { found = append(found, fset.Position(n.Pos()).String()+": "+what) }
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if _, ok := isHTTP(n, "DefaultServeMux"); ok {
				add(n, "http.DefaultServeMux")
			}
		case *ast.CallExpr:
			if name, ok := isHTTP(n.Fun, "Handle", "HandleFunc"); ok {
				add(n, "http."+name+" registers on the default mux")
			}
			if name, ok := isHTTP(n.Fun, "ListenAndServe", "Serve"); ok && len(n.Args) == 2 && isNil(n.Args[1]) {
				add(n, "http."+name+" with a nil handler serves the default mux")
			}
			if name, ok := isHTTP(n.Fun, "ListenAndServeTLS", "ServeTLS"); ok && len(n.Args) == 4 && isNil(n.Args[3]) {
				add(n, "http."+name+" with a nil handler serves the default mux")
			}
		case *ast.CompositeLit:
			if _, ok := isHTTP(n.Type, "Server"); ok {
				handler := false
				for _, el := range n.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Handler" && !isNil(kv.Value) {
							handler = true
						}
					}
				}
				if !handler {
					add(n, "an http.Server without a Handler serves the default mux")
				}
			}
		}
		return true
	})
	return found
}

func TestDefaultMuxUsesAreFound(t *testing.T) {
	src := `package p
import h "net/http"
func f(l any) {
	h.HandleFunc("/", nil)
	_ = h.ListenAndServe(":1", nil)
	_ = &h.Server{Addr: ":1"}
	_ = &h.Server{Handler: h.NewServeMux()}
	_ = h.DefaultServeMux
}`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := defaultMuxUses(fset, f); len(got) != 4 {
		t.Fatalf("found %d uses, want 4 (HandleFunc, ListenAndServe nil, Server without Handler, DefaultServeMux): %q", len(got), got)
	}
}

// TestNothingServesTheDefaultMux walks every Go file that ships (the services but their tooling modules, libs,
// cmd/zoea; tests excluded) and fails on any use of net/http's default mux.
func TestNothingServesTheDefaultMux(t *testing.T) {
	fset := token.NewFileSet()
	eachShippedGoFile(t, fset, func(_ string, f *ast.File) {
		for _, use := range defaultMuxUses(fset, f) {
			t.Errorf("%s (net/http/pprof registers its profiles there: serve an explicit mux)", use)
		}
	})
}
