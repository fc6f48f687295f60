package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	srcComment  = regexp.MustCompile(`<!--\s*src:\s*([^>]*?)\s*-->`)
	htmlComment = regexp.MustCompile(`(?s)<!--.*?-->`)
	bareURL     = regexp.MustCompile(`https?://[^\s)>]+`)
	linkTarget  = regexp.MustCompile(`\]\([^)]*\)`)
	isoDateTok  = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}\b`)
)

// proseFigures returns the figures a paragraph of prose states: dates whole, then numbers, leaving out code spans
// (commands, names, ports in addresses), URLs, link targets and comments.
func proseFigures(p string) []string {
	p = htmlComment.ReplaceAllString(p, " ")
	p = linkTarget.ReplaceAllString(p, "]")
	p = bareURL.ReplaceAllString(p, " ")
	p = codeSpan.ReplaceAllString(p, " ")
	dates := isoDateTok.FindAllString(p, -1)
	p = isoDateTok.ReplaceAllString(p, " ")
	return append(dates, numbersIn(p)...)
}

// paragraphs splits Markdown into its blocks outside fenced code: runs of non-blank lines.
func paragraphs(md string) []string {
	var out []string
	var cur []string
	in := false
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, "\n"))
			cur = nil
		}
	}
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			flush()
			continue
		}
		if in {
			continue
		}
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return out
}

// TestDocReadmeNumbersHaveSources: every number README.md states in its prose (a version, a figure, a date, a port)
// comes with a comment naming where it is defined or measured, <!-- src: FILE[, FILE] --> in the same paragraph or
// table, and is found there: in go.mod, docker-compose.yml, a document, or — for docs/BENCHMARKS.md — its table of
// current figures, so README can only quote a figure that is current. Commands, names and addresses in code spans
// and the code blocks are not figures.
func TestDocReadmeNumbersHaveSources(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	current, _ := currentFigures(t, root)
	checked := 0
	for _, p := range paragraphs(string(b)) {
		figures := proseFigures(p)
		if len(figures) == 0 {
			continue
		}
		var sources []string
		for _, m := range srcComment.FindAllStringSubmatch(p, -1) {
			for _, f := range strings.Split(m[1], ",") {
				sources = append(sources, strings.TrimSpace(f))
			}
		}
		first, _, _ := strings.Cut(p, "\n")
		if len(sources) == 0 {
			t.Errorf("README: %s stated without a source; add <!-- src: FILE --> to the paragraph %q", strings.Join(figures, ", "), first)
			continue
		}
		var texts []string
		for _, src := range sources {
			if src == filepath.Join("docs", "BENCHMARKS.md") {
				texts = append(texts, current)
				continue
			}
			sb, err := os.ReadFile(filepath.Join(root, src))
			if err != nil {
				t.Errorf("README: the source %s of %q: %v", src, first, err)
				continue
			}
			texts = append(texts, string(sb))
		}
		for _, n := range figures {
			checked++
			found := false
			for _, text := range texts {
				if containsNumber(text, n) {
					found = true
				}
			}
			if !found {
				t.Errorf("README: %s (in %q) is not in its source %s", n, first, strings.Join(sources, ", "))
			}
		}
	}
	if checked < 8 {
		t.Fatalf("only %d numbers in README checked: the pattern no longer finds them", checked)
	}
	t.Logf("%d numbers checked", checked)
}

// TestDocReadmeServicePorts: README's service table gives each service the port deploy's checks use (zoeaServices,
// which compose and Kubernetes are checked against) and the web console its port, and lists every service.
func TestDocReadmeServicePorts(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`^\| \[([a-z -]+)\]\([^)]+\) \| (\d+) \|`)
	seen := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		port, _ := strconv.Atoi(m[2])
		want, ok := zoeaServiceByName(m[1])
		if m[1] == "zoea web" {
			want, ok = webConsole, true
		}
		if !ok {
			t.Errorf("README's service table has %q, which is not a Zoea service", m[1])
			continue
		}
		seen[want.name] = true
		if port != want.port {
			t.Errorf("README gives %s port %d; the deployment uses %d", m[1], port, want.port)
		}
	}
	for _, s := range append(zoeaServices, webConsole) {
		if !seen[s.name] {
			t.Errorf("README's service table has no row for %s (port %d)", s.name, s.port)
		}
	}
}

// demoSwarm is the myses `make dev` creates: `zoea seed-demo`'s name pattern and default size.
func demoSwarm(t *testing.T, root string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "cmd", "zoea", "seed.go"))
	if err != nil {
		t.Fatal(err)
	}
	pattern := regexp.MustCompile(`Sprintf\("([a-z-]+)%d", i\+1\)`).FindStringSubmatch(string(b))
	size := regexp.MustCompile(`envInt\("ZOEA_DEMO_MYSES", (\d+)\)`).FindStringSubmatch(string(b))
	if pattern == nil || size == nil {
		t.Fatal("cmd/zoea/seed.go: cannot find the demo myses' name pattern (Sprintf of mysis- and i+1) or their default count")
	}
	n, _ := strconv.Atoi(size[1])
	var names []string
	for i := 1; i <= n; i++ {
		names = append(names, fmt.Sprintf("%s%d", pattern[1], i))
	}
	return names
}

// zoeaMysisArg: the commands whose first argument is a mysis.
var zoeaMysisArg = map[string]bool{"get": true, "send": true, "configure": true, "history": true, "preview": true,
	"stop": true, "start": true, "delete": true, "limits": true}

var (
	shellWord   = regexp.MustCompile(`"[^"]*"|'[^']*'|\S+`)
	jsonPayload = regexp.MustCompile(`-d '(\{[^']*\})'`)
)

// exampleMyses walks a document's shell examples in order and reports every mysis an example uses that does not
// exist at that point, and every create of a name that does, starting from the myses `make dev` creates.
func exampleMyses(t *testing.T, doc string, demo []string) (created []string, problems []string) {
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	exists := map[string]bool{}
	for _, n := range demo {
		exists[n] = true
	}
	use := func(line, name string) {
		if !exists[name] {
			problems = append(problems, fmt.Sprintf("uses mysis %s, which does not exist there: %s", name, line))
		}
	}
	create := func(line, name string) {
		if exists[name] {
			problems = append(problems, fmt.Sprintf("creates %s, which exists already there (AlreadyExists): %s", name, line))
		}
		exists[name] = true
		created = append(created, name)
	}
	in := false
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			continue
		}
		if !in {
			continue
		}
		if n := len(lines); n > 0 && strings.HasSuffix(lines[n-1], "\\") {
			lines[n-1] = strings.TrimSuffix(lines[n-1], "\\") + " " + strings.TrimSpace(l)
			continue
		}
		lines = append(lines, l)
	}
	for _, line := range lines {
		code, _, _ := strings.Cut(line, " # ")
		for _, cmd := range strings.Split(code, ";") {
			words := shellWord.FindAllString(strings.TrimSpace(cmd), -1)
			if len(words) >= 2 && (words[0] == "./bin/zoea" || words[0] == "zoea") {
				verb, args := words[1], words[2:]
				var pos []string
				for i := 0; i < len(args); i++ {
					if args[i] == "--mysis" && i+1 < len(args) {
						use(line, args[i+1])
						i++
						continue
					}
					if strings.HasPrefix(args[i], "-") {
						if !strings.Contains(args[i], "=") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") &&
							args[i] != "--start" && args[i] != "--yes" && args[i] != "--follow" && args[i] != "--json" && args[i] != "--full" {
							i++ // the flag's value
						}
						continue
					}
					pos = append(pos, args[i])
				}
				switch {
				case verb == "create" && len(pos) > 0:
					create(line, pos[0])
				case verb == "search" && len(pos) >= 2:
					use(line, pos[0])
				case zoeaMysisArg[verb] && len(pos) > 0:
					use(line, pos[0])
					if verb == "delete" {
						delete(exists, pos[0])
					}
				}
			}
			if strings.Contains(cmd, "grpcurl") {
				for _, m := range jsonPayload.FindAllStringSubmatch(cmd, -1) {
					var req map[string]any
					if json.Unmarshal([]byte(m[1]), &req) != nil {
						continue
					}
					if name, ok := req["name"].(string); ok {
						if strings.Contains(cmd, "/CreateMysis") {
							create(line, name)
						} else {
							use(line, name)
						}
					}
					if name, ok := req["mysis"].(string); ok {
						use(line, name)
					}
				}
			}
		}
	}
	return created, problems
}

// TestDocExamplesRunOnTheDemoSwarm: the shell examples of README.md, docs/CLI.md and docs/COOKBOOK.md work as written
// right after `make dev`, in the order they are written: they name only the myses it creates (mysis-1…mysis-3) or
// ones the same page created before, a create never takes a name that exists, and no two pages create the same
// name (whichever page is followed first, the other's creates still succeed).
func TestDocExamplesRunOnTheDemoSwarm(t *testing.T) {
	root := repoRoot(t)
	demo := demoSwarm(t, root)
	createdBy := map[string]string{}
	total := 0
	for _, rel := range []string{"README.md", "docs/CLI.md", "docs/COOKBOOK.md"} {
		created, problems := exampleMyses(t, filepath.Join(root, rel), demo)
		for _, p := range problems {
			t.Errorf("%s %s", rel, p)
		}
		for _, n := range created {
			if other, ok := createdBy[n]; ok && other != rel {
				t.Errorf("%s and %s both create %s: following one page after the other hits AlreadyExists", other, rel, n)
			}
			createdBy[n] = rel
		}
		total += len(created)
	}
	if total == 0 {
		t.Fatal("no example creates a mysis: the example pattern no longer matches the documents")
	}
}
