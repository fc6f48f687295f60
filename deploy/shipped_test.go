package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// eachShippedGoFile parses every Go file that ships — services (but their tooling), libs and cmd; tests,
// testdata and node_modules left out — and calls fn with its slash-separated path from the repository root. It
// fails the test when the walk fails or finds fewer than 100 files (the walk missed the tree).
func eachShippedGoFile(t *testing.T, fset *token.FileSet, fn func(rel string, f *ast.File)) {
	t.Helper()
	root := repoRoot(t)
	files := 0
	for _, dir := range []string{"services", "libs", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				parts := strings.Split(rel, "/")
				if d.Name() == "node_modules" || d.Name() == "testdata" || (len(parts) == 3 && parts[0] == "services" && parts[2] == "tools") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			files++
			fn(rel, f)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 100 {
		t.Fatalf("walked only %d Go files: the walk missed the tree", files)
	}
}
