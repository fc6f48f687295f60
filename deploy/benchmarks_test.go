package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// figureNumber is a number as the documents write them: 3,462, 99.46, 7.2, 0.18, 12; a number glued to letters
// (v3, o200k, 2x) is a name, not a figure.
var figureNumber = regexp.MustCompile(`(?:^|[^\w.,])(\d(?:[\d,.]*\d)?)`)

// numbersIn returns the figures of a piece of Markdown prose: code spans (commands, names) are left out.
func numbersIn(s string) []string {
	s = codeSpan.ReplaceAllString(s, " ")
	var out []string
	for _, m := range figureNumber.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// containsNumber reports whether text holds n as a number of its own: not part of a longer one (3,462 is not in
// 13,462 or 3,4621).
func containsNumber(text, n string) bool {
	re := regexp.MustCompile(`(?:^|[^\d,.])` + regexp.QuoteMeta(n) + `(?:$|[^\d,]|,\D|,$)`)
	return re.MatchString(text)
}

// tableCells splits a Markdown table row into its cells (an escaped \| stays in its cell).
func tableCells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(strings.TrimSuffix(row, "|"), "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			cur.WriteByte('|')
			i++
		case row[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(row[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// currentFigures returns docs/BENCHMARKS.md's section "Current figures" and the whole file.
func currentFigures(t *testing.T, root string) (section, whole string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	whole = string(b)
	_, rest, ok := strings.Cut(whole, "\n## Current figures\n")
	if !ok {
		t.Fatal(`docs/BENCHMARKS.md has no "## Current figures" section`)
	}
	section, _, _ = strings.Cut(rest, "\n## ")
	return section, whole
}

var isoDate = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// TestDocCurrentFiguresAreInTheirRuns holds docs/BENCHMARKS.md's table of current figures to the runs it links: each
// row names what, the figure, the date, the machine, the command and the run; every number of the figure and the
// date are in the linked run (so a row cannot quote a number its run does not have), and every run it links exists.
func TestDocCurrentFiguresAreInTheirRuns(t *testing.T) {
	root := repoRoot(t)
	section, _ := currentFigures(t, root)
	docs := filepath.Join(root, "docs")
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| what ") {
			continue
		}
		rows++
		c := tableCells(line)
		if len(c) != 6 {
			t.Errorf("current figures: %d cells, want 6 (what, figure, date, machine, command, full run): %s", len(c), line)
			continue
		}
		what, figure, date, machine, command, run := c[0], c[1], c[2], c[3], c[4], c[5]
		if !isoDate.MatchString(date) {
			t.Errorf("current figures, %q: date %q is not YYYY-MM-DD", what, date)
		}
		if machine == "" || !strings.Contains(command, "`") && command != "as above" {
			t.Errorf("current figures, %q: needs a machine and a command in backticks (or \"as above\")", what)
		}
		var text strings.Builder
		links := mdLink.FindAllStringSubmatch(run, -1)
		if len(links) == 0 {
			t.Errorf("current figures, %q: links no run", what)
		}
		for _, l := range links {
			b, err := os.ReadFile(filepath.Join(docs, strings.SplitN(l[1], "#", 2)[0]))
			if err != nil {
				t.Errorf("current figures, %q: %v", what, err)
				continue
			}
			text.Write(b)
		}
		runs := text.String()
		if !strings.Contains(runs, date) {
			t.Errorf("current figures, %q: the date %s is not in the run it links", what, date)
		}
		for _, n := range numbersIn(figure) {
			if !containsNumber(runs, n) {
				t.Errorf("current figures, %q: %s is not in the run it links (%s)", what, n, run)
			}
		}
	}
	if rows < 20 {
		t.Fatalf("only %d rows of current figures: the table's shape changed", rows)
	}
}

// TestDocEveryRunIsListed: every dated run in docs/benchmarks/ is named YYYY-MM-DD-<slug>.md, opens with its title and
// is listed in docs/BENCHMARKS.md's "Every run" (the list is the way to the history; a run nobody links is lost).
func TestDocEveryRunIsListed(t *testing.T) {
	root := repoRoot(t)
	_, whole := currentFigures(t, root)
	_, list, ok := strings.Cut(whole, "\n## Every run\n")
	if !ok {
		t.Fatal(`docs/BENCHMARKS.md has no "## Every run" section`)
	}
	files, err := filepath.Glob(filepath.Join(root, "docs", "benchmarks", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 40 {
		t.Fatalf("only %d runs in docs/benchmarks/", len(files))
	}
	name := regexp.MustCompile(`^\d{4}-\d{2}-\d{2}-[a-z0-9]+(?:-[a-z0-9]+)*\.md$`)
	for _, f := range files {
		base := filepath.Base(f)
		if !name.MatchString(base) {
			t.Errorf("docs/benchmarks/%s: name it YYYY-MM-DD-<slug>.md", base)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), "# ") {
			t.Errorf("docs/benchmarks/%s does not open with its title (# …)", base)
		}
		if !strings.Contains(list, "](benchmarks/"+base+")") {
			t.Errorf("docs/benchmarks/%s is not listed in docs/BENCHMARKS.md, \"Every run\"", base)
		}
	}
}
