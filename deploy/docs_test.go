package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The documents whose references must resolve: README.md, docs/*.md, the dated runs in docs/benchmarks/ and every
// service's README.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{filepath.Join(root, "README.md")}
	for _, pattern := range []string{"docs/*.md", "docs/benchmarks/*.md", "services/*/README.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 8 {
		t.Fatalf("found only %d documents: %v", len(files), files)
	}
	return files
}

var (
	mdLink   = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	codeSpan = regexp.MustCompile("`([^`\n]+)`")
	// A repository path in a code span: slash-separated names, or one name with a document or source extension.
	pathLike  = regexp.MustCompile(`^\.?[A-Za-z0-9_-][A-Za-z0-9_.-]*(/[A-Za-z0-9_.-]+)+/?$`)
	fileLike  = regexp.MustCompile(`^[A-Za-z0-9_.-]+\.(md|go|ya?ml|sh|proto|sql|mod)$`)
	bareDocMD = regexp.MustCompile(`(?:^|[\s(])([A-Z][A-Z_]+\.md)\b`)
)

// generated are paths a document names that exist only once something ran (builds, `zoea dev`, tests).
var generated = []string{"bin/", ".zoea/", "/tmp/", "docker-compose.override.yml", ".env"}

// notPaths are code spans shaped like paths that name protocol methods and units, not files.
var notPaths = []string{"server/discover", "tools/call", "tools/list", "notifications/initialized", "ns/op", "cpu-ns/op", "B/op", "allocs/op"}

// TestDocReferencesExist checks every relative link and every repository path named in code spans of the documents:
// a reader who follows one must find the file. A path is looked up from the document's directory, the repository
// root and every module (service READMEs and docs name packages as `internal/x` or `cmd/y`); a bare file name
// anywhere in the repository. docs/benchmarks/ holds the dated runs, each as written on its day: their links are
// checked, the code they name is as it was on that day. docs/BENCHMARKS.md's current table is checked like any
// document.
func TestDocReferencesExist(t *testing.T) {
	root := repoRoot(t)
	bases := []string{root, filepath.Join(root, "docs"), filepath.Join(root, "libs"), filepath.Join(root, "cmd/zoea"), filepath.Join(root, "deploy")}
	svcs, _ := filepath.Glob(filepath.Join(root, "services", "*"))
	bases = append(bases, svcs...)
	names := map[string]bool{}
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == ".zoea") {
			return filepath.SkipDir
		}
		names[d.Name()] = true
		return nil
	})
	checked := 0
	for _, doc := range docFiles(t, root) {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		text := string(b)
		exists := func(p string) bool {
			for _, base := range append([]string{filepath.Dir(doc)}, bases...) {
				if _, err := os.Stat(filepath.Join(base, p)); err == nil {
					return true
				}
			}
			return false
		}
		isDirSomewhere := func(seg string) bool {
			for _, base := range append([]string{filepath.Dir(doc)}, bases...) {
				if fi, err := os.Stat(filepath.Join(base, seg)); err == nil && fi.IsDir() {
					return true
				}
			}
			return false
		}
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			checked++
			if _, err := os.Stat(filepath.Join(filepath.Dir(doc), target)); err != nil {
				t.Errorf("%s links to %s, which does not exist", rel, m[1])
			}
		}
		if isDatedRun(rel) {
			continue
		}
		// Fenced code blocks hold commands and output, not references; only prose code spans are paths.
		prose := stripFences(text)
		for _, m := range codeSpan.FindAllStringSubmatch(prose, -1) {
			p := strings.TrimSpace(m[1])
			if strings.ContainsAny(p, "<>*$ ") || strings.Contains(p, "://") || strings.HasPrefix(p, "/") ||
				slices.Contains(notPaths, p) || isNotAPath(p) ||
				slices.ContainsFunc(generated, func(g string) bool { return strings.HasPrefix(p, g) }) {
				continue
			}
			switch {
			case pathLike.MatchString(p):
				first, _, _ := strings.Cut(strings.TrimPrefix(p, "./"), "/")
				if !isDirSomewhere(first) {
					continue // not a repository path (a URL path, a Kubernetes API group, a label)
				}
				checked++
				if !exists(p) {
					t.Errorf("%s names `%s`, which does not exist", rel, p)
				}
			case fileLike.MatchString(p):
				checked++
				if !names[p] {
					t.Errorf("%s names the file `%s`, which is nowhere in the repository", rel, p)
				}
			}
		}
		for _, m := range bareDocMD.FindAllStringSubmatch(prose, -1) {
			checked++
			if !exists(m[1]) {
				t.Errorf("%s cites %s, which is not in the repository", rel, m[1])
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d references checked: the patterns no longer match the documents", checked)
	}
	t.Logf("%d references checked", checked)
}

// isDatedRun reports whether rel (relative to the repository root) is one of the dated runs in docs/benchmarks/.
func isDatedRun(rel string) bool {
	return filepath.Dir(rel) == filepath.Join("docs", "benchmarks")
}

// isNotAPath skips code spans shaped like paths that name something else: gRPC methods, Go import paths of
// modules and packages outside this repository, and MIME types.
func isNotAPath(p string) bool {
	for _, prefix := range []string{"zoea.", "grpc.", "github.com/", "golang.org/", "google.golang.org/", "go.opentelemetry.io/",
		"k8s.io/", "sigs.k8s.io/", "honnef.co/", "modelcontextprotocol/", "compose-spec/", "application/", "text/",
		"gcr.io/", "ghcr.io/", "zoea/", "nats:", "postgres:", "otel/", "ollama/", "jaegertracing/"} {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

func stripFences(s string) string {
	var out []string
	in := false
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if !in {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
