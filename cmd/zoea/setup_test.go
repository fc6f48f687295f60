package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fakeCommands writes executable shell scripts named after the keys into a new directory and returns it.
func fakeCommands(t *testing.T, scripts map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runScript runs a .ci script with bash, with PATH set to path.
func runScript(t *testing.T, path, script string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join("..", "..", ".ci", script)}, args...)...)
	cmd.Env = append(os.Environ(), append(env, "PATH="+path)...) // the last PATH wins
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// first puts dir before the test's own PATH.
func first(dir string) string { return dir + string(os.PathListSeparator) + os.Getenv("PATH") }

// make build prints how far it got while go build compiles (a first build takes many minutes and go build says
// nothing meanwhile), shows go build's errors, and keeps its exit status. A fake go on PATH plays go list and a
// go build -v that compiles two packages and then fails; ZOEA_BUILD_PROGRESS_EVERY=0 makes a progress line follow
// every line go build writes, so the test needs no clock.
func TestBuildScriptSaysHowFarItGot(t *testing.T) {
	for _, fails := range []bool{false, true} {
		exit := "0"
		if fails {
			exit = "2"
		}
		dir := fakeCommands(t, map[string]string{"go": `case "$1" in
list) printf 'main example.com/cmd/a\nstale example.com/lib/b\nstale example.com/lib/c\n' ;;
build) printf 'example.com/lib/b\nexample.com/lib/c\nexample.com/cmd/a\n' >&2
  [ ` + exit + ` = 0 ] || printf '# example.com/cmd/a\ncmd/a/main.go:3:2: undefined: x\n' >&2
  exit ` + exit + ` ;;
esac
`})
		out, err := runScript(t, first(dir), "build.sh", []string{"ZOEA_BUILD_PROGRESS_EVERY=0"}, "-trimpath", "-o", "bin/", "./cmd/a")
		lines := regexp.MustCompile(`\(\d+s\)`).ReplaceAllString(out, "(Ns)")
		for _, want := range []string{
			"building: 1 of 2 packages compiled (Ns)\n",
			"building: 2 of 2 packages compiled, linking the binaries (Ns)\n",
		} {
			if !strings.Contains(lines, want) {
				t.Errorf("fails=%t: no %q in:\n%s", fails, want, out)
			}
		}
		if fails {
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
				t.Errorf("a failed build must keep go build's exit status 2, got %v", err)
			}
			if !strings.Contains(out, "# example.com/cmd/a\n") || !strings.Contains(out, "cmd/a/main.go:3:2: undefined: x\n") ||
				!strings.Contains(out, "build failed after") {
				t.Errorf("go build's errors are not shown:\n%s", out)
			}
			continue
		}
		if err != nil || !strings.Contains(out, "built in ") || !strings.Contains(out, ": 2 packages compiled") {
			t.Errorf("a build that works: %v\n%s", err, out)
		}
		if strings.Contains(out, "example.com/") {
			t.Errorf("package names are counted, not printed:\n%s", out)
		}
	}
}

// make test's set-up installs what its tests need, Node.js included (the simulator's TypeScript MCP SDK test): its
// check names Node.js when it is missing or too old, instead of letting that test skip.
func TestServicesCheckNamesNodeJS(t *testing.T) {
	old := fakeCommands(t, map[string]string{
		"node": `case "$1" in --version) echo v16.20.0 ;; *) exit 1 ;; esac` + "\n",
		"npm":  "echo 8.19.4\n",
	})
	for _, c := range []struct {
		name, path, want string
	}{
		// Nothing on PATH: the check lists everything, Node.js among it.
		{"missing", t.TempDir(), "Node.js and npm are not installed (the simulator's TypeScript MCP SDK test runs them)"},
		{"too old", first(old), "Node.js v16.20.0 is older than 18, which the TypeScript MCP SDK test needs"},
	} {
		out, err := runScript(t, c.path, "services.sh", nil, "--check")
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("%s: --check said (%v):\n%s\nwant %q", c.name, err, out, c.want)
		}
	}
	if _, err := exec.LookPath("node"); err == nil {
		if out, _ := runScript(t, os.Getenv("PATH"), "services.sh", nil, "--check"); strings.Contains(out, "Node.js") {
			t.Errorf("--check complains about the Node.js this machine has:\n%s", out)
		}
	}
}
