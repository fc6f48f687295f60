package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// headingsOf returns a Markdown file's headings (outside fenced code blocks), without their leading #s.
func headingsOf(t *testing.T, path string) []string {
	hs, _ := sectionsOf(t, path)
	return hs
}

// boldLead is a paragraph or list item that opens with bold words, the way the service READMEs name their
// subsections ("- **Group commit.** Concurrent small appends …").
var boldLead = regexp.MustCompile(`^\s*(?:[-*] |\d+\. )?\*\*([^*]+)\*\*`)

// sectionsOf returns a Markdown file's headings and the bold words that open its paragraphs and list items.
func sectionsOf(t *testing.T, path string) (headings, leads []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if in {
			continue
		}
		if strings.HasPrefix(line, "#") {
			if h := strings.TrimLeft(line, "#"); strings.HasPrefix(h, " ") {
				headings = append(headings, strings.TrimSpace(h))
			}
		} else if m := boldLead.FindStringSubmatch(line); m != nil {
			leads = append(leads, m[1])
		}
	}
	return headings, leads
}

// anchorOf is GitHub's anchor for a heading: lower case, every character but letters, digits, spaces, hyphens and
// underscores removed, spaces turned into hyphens.
func anchorOf(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// anchorsOf is every anchor a Markdown file has: its headings', a repeated one numbered as GitHub numbers it.
func anchorsOf(t *testing.T, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	seen := map[string]int{}
	for _, h := range headingsOf(t, path) {
		a := anchorOf(h)
		if n := seen[a]; n > 0 {
			out[a+"-"+itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}

// TestDocAnchorsExist checks the #fragment of every relative Markdown link to a .md file (or within the same file):
// the heading it names must exist, so a section renamed or moved breaks the test, not the reader's click.
func TestDocAnchorsExist(t *testing.T) {
	root := repoRoot(t)
	checked := 0
	for _, doc := range docFiles(t, root) {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || !strings.Contains(target, "#") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				if !strings.HasSuffix(file, ".md") {
					continue
				}
				path = filepath.Join(filepath.Dir(doc), file)
				if _, err := os.Stat(path); err != nil {
					continue // TestDocReferencesExist reports the missing file
				}
			}
			checked++
			if !anchorsOf(t, path)[frag] {
				t.Errorf("%s links to %s: %s has no heading with the anchor #%s", rel, target, filepath.Base(path), frag)
			}
		}
	}
	if checked < 3 {
		t.Fatalf("only %d anchors checked: the link pattern no longer matches the documents", checked)
	}
	t.Logf("%d anchors checked", checked)
}

// sectionRef is a reference to a section of a document by its heading: `docs/OPERATIONS.md, "NATS"`,
// `services/memory/README.md "Group commit"`, `[BENCHMARKS.md](BENCHMARKS.md), "…"`; several quoted headings may
// follow one file.
var sectionRef = regexp.MustCompile(`([A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md)(?:\]\([^)\s]*\))?\)?((?:,? "[^"\n]{2,120}")+)`)

var quoted = regexp.MustCompile(`"([^"\n]+)"`)

// datedRun names one of the dated runs in docs/benchmarks/, with or without its directory.
var datedRun = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.md\b`)

// commentLead joins a reference wrapped over lines: a line break with a comment's or a list's lead-in is a space.
var commentLead = regexp.MustCompile(`\n[ \t]*(?://+|#+(?:[ \t]|$)|\*|-)?[ \t]*`)

// TestDocSectionReferencesResolve checks every reference to a document's section by its heading, in the code (comments),
// the scripts, the deployment files and the documents: the file must have a heading that begins with the quoted
// words (or a paragraph or list item that opens with them in bold). A section renamed, or moved to another file (the runs moved from docs/BENCHMARKS.md into docs/benchmarks/),
// must take its references along; every dated run a file names must be in docs/benchmarks/. The dated runs
// themselves are as written on their day and are not checked.
func TestDocSectionReferencesResolve(t *testing.T) {
	root := repoRoot(t)
	headingCache := map[string][]string{}
	checked := 0
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if name == ".git" || name == "bin" || name == ".zoea" || name == "node_modules" || p == filepath.Join(root, "gen") ||
				p == filepath.Join(root, "docs", "benchmarks") {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(name)
		if ext != ".go" && ext != ".md" && ext != ".sh" && ext != ".yaml" && ext != ".yml" && name != "Makefile" && name != "Dockerfile" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		text := commentLead.ReplaceAllString(string(b), " ")
		for _, name := range datedRun.FindAllString(text, -1) {
			checked++
			if _, err := os.Stat(filepath.Join(root, "docs", "benchmarks", name)); err != nil {
				t.Errorf("%s names the run %s, which is not in docs/benchmarks/", rel, name)
			}
		}
		for _, m := range sectionRef.FindAllStringSubmatch(text, -1) {
			target := resolveDoc(root, filepath.Dir(p), m[1])
			if target == "" {
				continue // not a file of this repository (TestDocReferencesExist checks the documents' paths)
			}
			hs, ok := headingCache[target]
			if !ok {
				heads, leads := sectionsOf(t, target)
				hs = append(heads, leads...)
				headingCache[target] = hs
			}
			for _, q := range quoted.FindAllStringSubmatch(m[2], -1) {
				checked++
				if !hasHeadingPrefix(hs, q[1]) {
					trel, _ := filepath.Rel(root, target)
					t.Errorf("%s refers to %s, %q: %s has no heading (or bold lead) beginning with those words", rel, m[1], q[1], trel)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("only %d section references checked: the pattern no longer matches", checked)
	}
	t.Logf("%d section references checked", checked)
}

// resolveDoc finds a referenced document from the referring file's directory, the repository root or docs/.
func resolveDoc(root, dir, ref string) string {
	for _, base := range []string{dir, root, filepath.Join(root, "docs")} {
		p := filepath.Join(base, ref)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	return ""
}

func hasHeadingPrefix(headings []string, words string) bool {
	norm := func(s string) string {
		s = strings.NewReplacer("`", "", "*", "").Replace(strings.ToLower(s))
		return strings.Join(strings.Fields(strings.TrimLeft(s, "# ")), " ")
	}
	w := norm(words)
	for _, h := range headings {
		if strings.HasPrefix(norm(h), w) {
			return true
		}
	}
	return false
}
