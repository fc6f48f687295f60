package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// instruction is one Dockerfile instruction with continuation lines joined.
type instruction struct {
	line  int    // 1-based line where it starts
	cmd   string // upper-cased: FROM, COPY, RUN, ...
	flags map[string]string
	args  []string // JSON form decoded, shell form split on blanks (RUN keeps one string)
	raw   string
}

type stage struct {
	name  string
	from  string
	insts []instruction
}

// parseDockerfile is a small parser for the subset of syntax our Dockerfile uses: comments, parser directives,
// backslash continuations, --flags, and the JSON (exec) form. No heredocs.
func parseDockerfile(t *testing.T, file string) (globalArgs []instruction, stages []*stage) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var cur *stage
	for i := 0; i < len(lines); i++ {
		start := i
		text := strings.TrimSpace(lines[i])
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		for strings.HasSuffix(text, `\`) && i+1 < len(lines) {
			i++
			next := strings.TrimSpace(lines[i])
			if strings.HasPrefix(next, "#") {
				continue
			}
			text = strings.TrimSuffix(text, `\`) + " " + next
		}
		cmd, rest, _ := strings.Cut(text, " ")
		in := instruction{line: start + 1, cmd: strings.ToUpper(cmd), flags: map[string]string{}, raw: text}
		rest = strings.TrimSpace(rest)
		for strings.HasPrefix(rest, "--") {
			var flag string
			flag, rest, _ = strings.Cut(rest, " ")
			k, v, _ := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
			in.flags[k] = v
			rest = strings.TrimSpace(rest)
		}
		switch {
		case strings.HasPrefix(rest, "["):
			if err := json.Unmarshal([]byte(rest), &in.args); err != nil {
				t.Fatalf("%s:%d: %s: bad JSON form: %v", file, in.line, in.cmd, err)
			}
		case in.cmd == "RUN":
			in.args = []string{rest}
		default:
			in.args = strings.Fields(rest)
		}
		switch {
		case in.cmd == "FROM":
			cur = &stage{from: in.args[0]}
			if len(in.args) == 3 && strings.EqualFold(in.args[1], "AS") {
				cur.name = in.args[2]
			}
			stages = append(stages, cur)
		case cur == nil:
			if in.cmd != "ARG" {
				t.Fatalf("%s:%d: %s before the first FROM", file, in.line, in.cmd)
			}
			globalArgs = append(globalArgs, in)
		default:
			cur.insts = append(cur.insts, in)
		}
	}
	return globalArgs, stages
}

func (s *stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.insts {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// rawRun is the whole text (flags included) of the stage's RUN whose command contains sub.
func (s *stage) rawRun(sub string) string {
	for _, in := range s.all("RUN") {
		if strings.Contains(in.args[0], sub) {
			return in.raw
		}
	}
	return ""
}

func stageNamed(stages []*stage, name string) *stage {
	for _, s := range stages {
		if s.name == name {
			return s
		}
	}
	return nil
}

const dockerfilePath = "deploy/docker/Dockerfile"

// The binaries the Dockerfile must be able to build: every service plus the commander CLI.
var imageTargets = func() []string {
	var out []string
	for _, s := range zoeaServices {
		out = append(out, s.name)
	}
	return append(out, "zoea")
}()

func TestDockerfileStages(t *testing.T) {
	root := repoRoot(t)
	// A `# syntax=` directive names a frontend image: every build would contact a registry even with every base
	// image local (an offline lab, a registry outage). The engine's built-in frontend handles RUN --mount.
	if b, err := os.ReadFile(filepath.Join(root, dockerfilePath)); err != nil {
		t.Fatal(err)
	} else if regexp.MustCompile(`(?mi)\A(#[^\n]*\n)*#\s*syntax\s*=`).Match(b) {
		t.Error("the Dockerfile names a frontend image (# syntax=): builds would need a registry")
	}
	globals, stages := parseDockerfile(t, filepath.Join(root, dockerfilePath))

	argDefaults := map[string]string{}
	for _, a := range globals {
		k, v, _ := strings.Cut(a.args[0], "=")
		argDefaults[k] = v
	}
	if _, ok := argDefaults["SERVICE"]; !ok {
		t.Errorf("no global ARG SERVICE: the final stage cannot be chosen by --build-arg SERVICE")
	}
	if v := argDefaults["GO_VERSION"]; v != "1.26" {
		t.Errorf("ARG GO_VERSION=%q, want 1.26 (go.mod says go 1.26)", v)
	}

	last := stages[len(stages)-1]
	if last.from != "${SERVICE}" || last.name != "" {
		t.Errorf("final stage is FROM %s (AS %q), want FROM ${SERVICE} so --build-arg SERVICE selects the image", last.from, last.name)
	}

	build := stageNamed(stages, "build")
	if build == nil {
		t.Fatal("no stage named build")
	}
	if build.from != "golang:${GO_VERSION}" {
		t.Errorf("build stage FROM %s, want golang:${GO_VERSION}", build.from)
	}
	env := strings.Join(instructionArgs(build.all("ENV")), " ")
	if !strings.Contains(env, "CGO_ENABLED=0") {
		t.Errorf("build stage does not set CGO_ENABLED=0 (ENV %q): the binaries must be static for distroless/static", env)
	}
	var buildRun string
	for _, r := range build.all("RUN") {
		if strings.Contains(r.args[0], "go build") {
			buildRun = r.args[0]
		}
	}
	for _, want := range []string{"-trimpath", "-X main.version=${VERSION}", "-o /out/ "} {
		if !strings.Contains(buildRun, want) {
			t.Errorf("go build step lacks %q:\n%s", want, buildRun)
		}
	}
	// One build stage for every image: it must not depend on which image is asked for, or compose's six builds
	// would compile (and cache) six times.
	for _, in := range build.insts {
		if strings.Contains(in.raw, "SERVICE") {
			t.Errorf("line %d: the build stage uses SERVICE (%s); it must build every binary the same way", in.line, in.raw)
		}
	}
	// Both Go caches are BuildKit cache mounts shared across builds: no per-image module download layer.
	for _, target := range []string{"/go/pkg/mod", "/root/.cache/go-build"} {
		if !regexp.MustCompile(`--mount=type=cache,(id=[\w-]+,)?target=` + regexp.QuoteMeta(target) + `\b`).MatchString(build.rawRun("go build")) {
			t.Errorf("the go build step does not mount a cache at %s", target)
		}
	}
	// VERSION changes with every tag: declared after every COPY so a new version only relinks.
	versionAt, lastCopy := -1, -1
	for i, in := range build.insts {
		if in.cmd == "ARG" && strings.HasPrefix(in.args[0], "VERSION") {
			versionAt = i
		}
		if in.cmd == "COPY" {
			lastCopy = i
		}
	}
	if versionAt < 0 {
		t.Error("build stage does not declare ARG VERSION")
	} else if versionAt < lastCopy {
		t.Errorf("ARG VERSION comes before a COPY: a new version would invalidate the layers after it")
	}
	// Every image's binary is built by the one step.
	for _, name := range imageTargets {
		pkg := "./services/" + name + "/cmd/" + name
		if name == "zoea" {
			pkg = "./cmd/zoea"
		}
		if !strings.Contains(buildRun+" ", pkg+" ") {
			t.Errorf("build step does not build %s", pkg)
		}
	}

	runtime := stageNamed(stages, "runtime")
	if runtime == nil {
		t.Fatal("no stage named runtime")
	}
	if runtime.from != "gcr.io/distroless/static-debian12:nonroot" {
		t.Errorf("runtime stage FROM %s, want gcr.io/distroless/static-debian12:nonroot", runtime.from)
	}
	users := runtime.all("USER")
	if len(users) == 0 {
		t.Fatal("runtime stage sets no USER")
	}
	uid, _, _ := strings.Cut(users[len(users)-1].args[0], ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("runtime USER %q: want a numeric non-root uid (Kubernetes runAsNonRoot cannot verify a user name)", users[len(users)-1].args[0])
	}

	for _, name := range imageTargets {
		s := stageNamed(stages, name)
		if s == nil {
			t.Errorf("no stage %q", name)
			continue
		}
		if s.from != "runtime" {
			t.Errorf("stage %s FROM %s, want runtime (distroless, non-root)", name, s.from)
		}
		bin := "/usr/local/bin/" + name
		copies := s.all("COPY")
		if name == "spacemolt-sim" && len(copies) == 2 {
			// The state volume's mount point, owned by the non-root user so a new named volume is writable.
			c := copies[1]
			if c.flags["from"] != "build" || c.flags["chown"] != "65532:65532" || len(c.args) != 2 || c.args[1] != "/data" {
				t.Errorf("stage %s: second COPY %s, want COPY --from=build --chown=65532:65532 <empty dir> /data", name, c.raw)
			}
			copies = copies[:1]
		}
		if len(copies) != 1 || copies[0].flags["from"] != "build" || !slices.Equal(copies[0].args, []string{"/out/" + name, bin}) {
			t.Errorf("stage %s: want exactly COPY --from=build /out/%s %s, got %v", name, name, bin, instructionRaw(copies))
		}
		eps := s.all("ENTRYPOINT")
		if len(eps) != 1 || !slices.Equal(eps[0].args, []string{bin}) {
			t.Errorf("stage %s: want ENTRYPOINT [%q] (exec form), got %v", name, bin, instructionRaw(eps))
		}
		var exposed []string
		for _, e := range s.all("EXPOSE") {
			exposed = append(exposed, e.args...)
		}
		want := []string(nil)
		if svc, ok := zoeaServiceByName(name); ok {
			want = []string{strconv.Itoa(svc.port)}
		}
		if !slices.Equal(exposed, want) {
			t.Errorf("stage %s EXPOSE %v, want %v", name, exposed, want)
		}
	}
}

func instructionArgs(ins []instruction) []string {
	var out []string
	for _, in := range ins {
		out = append(out, in.args...)
	}
	return out
}

func instructionRaw(ins []instruction) []string {
	var out []string
	for _, in := range ins {
		out = append(out, in.raw)
	}
	return out
}

// Every service directory has a main package where the Dockerfile looks for it, and no service directory is left
// without an image.
func TestDockerfileCoversEveryService(t *testing.T) {
	root := repoRoot(t)
	entries, err := os.ReadDir(filepath.Join(root, "services"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	var want []string
	for _, s := range zoeaServices {
		want = append(want, s.name)
		if _, err := os.Stat(filepath.Join(root, "services", s.name, "cmd", s.name)); err != nil {
			t.Errorf("service %s: %v", s.name, err)
		}
	}
	slices.Sort(dirs)
	slices.Sort(want)
	if !slices.Equal(dirs, want) {
		t.Errorf("services/ holds %v, the Dockerfile and manifests know %v: add the new service to both", dirs, want)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "zoea")); err != nil {
		t.Errorf("cmd/zoea: %v", err)
	}
}

// Every COPY from the build context names files that exist and that .dockerignore lets through, and the root
// module's manifest and every source directory of the binaries are copied before `go build`.
func TestDockerfileCopySources(t *testing.T) {
	root := repoRoot(t)
	_, stages := parseDockerfile(t, filepath.Join(root, dockerfilePath))
	ignore := dockerignore(t, root)

	build := stageNamed(stages, "build")
	if build == nil {
		t.Fatal("no build stage")
	}
	compile := -1
	var sources []string // what the build stage copies before it compiles
	for _, s := range stages {
		for i, in := range s.insts {
			if s == build && in.cmd == "RUN" && strings.Contains(in.args[0], "go build") {
				compile = i
			}
			if in.cmd != "COPY" && in.cmd != "ADD" {
				continue
			}
			if in.cmd == "ADD" {
				t.Errorf("line %d: ADD; use COPY", in.line)
			}
			if in.flags["from"] != "" {
				continue
			}
			if len(in.args) < 2 {
				t.Errorf("line %d: COPY needs a source and a destination", in.line)
				continue
			}
			for _, src := range in.args[:len(in.args)-1] {
				checkContextPath(t, root, ignore, in.line, src)
				if s == build && compile < 0 {
					sources = append(sources, src)
				}
			}
		}
	}
	if compile < 0 {
		t.Fatal("build stage has no `go build` step")
	}
	for _, want := range []string{"go.mod", "go.sum"} {
		if !slices.Contains(sources, want) {
			t.Errorf("%s is not copied before go build", want)
		}
	}
	for _, dir := range []string{"gen", "libs", "cmd", "services"} {
		if !slices.ContainsFunc(sources, func(src string) bool {
			return src == dir+"/" || strings.HasPrefix(dir+"/", strings.TrimSuffix(src, "/")+"/")
		}) {
			t.Errorf("%s/: its sources are never copied into the build stage", dir)
		}
	}
}

func dockerignore(t *testing.T, root string) *patternmatcher.PatternMatcher {
	t.Helper()
	f, err := os.Open(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatalf(".dockerignore: %v (without it the whole repository, .git included, is sent as build context)", err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	for _, must := range []string{".git/config", "deploy/k8s/base/kustomization.yaml", "docs/DEPLOY.md"} {
		if excluded, _ := pm.MatchesOrParentMatches(must); !excluded {
			t.Errorf(".dockerignore lets %s into the build context", must)
		}
	}
	return pm
}

// checkContextPath fails unless src (a context path, possibly a glob, possibly a directory) matches at least one
// file that exists and survives .dockerignore.
func checkContextPath(t *testing.T, root string, ignore *patternmatcher.PatternMatcher, line int, src string) {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(strings.TrimSuffix(src, "/"))))
	if err != nil || len(matches) == 0 {
		t.Errorf("line %d: COPY source %q matches nothing in the repository", line, src)
		return
	}
	kept := 0
	for _, m := range matches {
		_ = filepath.WalkDir(m, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			r, _ := filepath.Rel(root, p)
			if excluded, _ := ignore.MatchesOrParentMatches(filepath.ToSlash(r)); !excluded {
				kept++
			}
			return nil
		})
	}
	if kept == 0 {
		t.Errorf("line %d: COPY source %q exists but .dockerignore excludes all of it", line, src)
	}
}

// .dockerignore must not hide a file that non-test code embeds, or the image build fails where `go build` works.
func TestDockerignoreKeepsEmbeddedFiles(t *testing.T) {
	root := repoRoot(t)
	ignore := dockerignore(t, root)
	embed := regexp.MustCompile(`^//go:embed\s+(.+)$`)
	checked := 0
	for _, top := range []string{"gen", "libs", "cmd", "services"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, line := range strings.Split(string(b), "\n") {
				m := embed.FindStringSubmatch(strings.TrimSpace(line))
				if m == nil {
					continue
				}
				for _, pat := range strings.Fields(m[1]) {
					pat = strings.TrimPrefix(strings.Trim(pat, "`\""), "all:")
					matches, _ := filepath.Glob(filepath.Join(filepath.Dir(p), pat))
					kept := slices.ContainsFunc(matches, func(f string) bool {
						r, _ := filepath.Rel(root, f)
						excluded, _ := ignore.MatchesOrParentMatches(filepath.ToSlash(r))
						return !excluded
					})
					if !kept {
						r, _ := filepath.Rel(root, p)
						t.Errorf("%s embeds %q, but nothing it matches reaches the Docker build context", r, pat)
					}
					checked++
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d //go:embed patterns checked", checked)
}
