package mcpserver_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/zoeaswarm/zoea/libs/testsupport/testdep"
)

// TestV2StarterLoopTypeScriptSDK: the official TypeScript MCP SDK client (npm @modelcontextprotocol/sdk, pinned by
// testdata/tsclient/package-lock.json) plays the starter loop on /mcp/v2. It needs node and npm (CI installs them:
// .ci/node.sh); the packages are installed with npm ci into a cache directory keyed by the lock file.
func TestV2StarterLoopTypeScriptSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("installs npm packages and runs node")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		testdep.Missing(t, "node (Node.js 18 or later) on PATH for the TypeScript MCP SDK client")
		return
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		testdep.Missing(t, "npm on PATH for the TypeScript MCP SDK client")
		return
	}
	dir := npmInstall(t, npm, filepath.Join("testdata", "tsclient"))
	s := newSim(t, simOptions{})
	cmd := exec.Command(node, filepath.Join(dir, "play.mjs"), s.urlV2, "tsclient")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node play.mjs: %v\n%s%s", err, out, stderr)
	}
	var got struct {
		CreditsBefore int `json:"credits_before"`
		CreditsAfter  int `json:"credits_after"`
		Sold          int `json:"sold"`
		Tools         int `json:"tools"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("play.mjs printed %q: %v", out, err)
	}
	if got.Tools != 16 || got.Sold != 15 || got.CreditsAfter <= got.CreditsBefore {
		t.Fatalf("TypeScript client: %+v; want 16 tools, 15 units sold and more credits", got)
	}
	stats := s.engine.Stats()
	if len(stats.Players) != 1 || stats.Players[0].CreditsEarned != got.CreditsAfter-got.CreditsBefore {
		t.Fatalf("simulator stats %+v disagree with the client %+v", stats.Players, got)
	}
}

// npmInstall copies the client (package.json, package-lock.json, play.mjs) into a cache directory named by the
// hash of those files and runs npm ci there once; later runs reuse it. Test processes running at once (two
// `make test`s) each install into a directory of their own and rename it into place; the first rename wins, the
// others use the winner's and remove theirs, so a directory another test is running from is never replaced.
func npmInstall(t *testing.T, npm, src string) string {
	t.Helper()
	h := sha256.New()
	files := []string{"package.json", "package-lock.json", "play.mjs"}
	contents := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		contents[f] = b
		h.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "zoea", "tsclient-"+hex.EncodeToString(h.Sum(nil))[:16])
	installed := func() bool {
		_, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json"))
		return err == nil
	}
	if installed() {
		return dir
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".*.tmp")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp) // gone after a successful rename
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, b := range contents {
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		testdep.Missing(t, "npm ci of the TypeScript MCP SDK (registry reachable?): %v\n%s", err, out)
		return ""
	}
	if err := os.Rename(tmp, dir); err != nil && !installed() {
		t.Fatalf("install the TypeScript client into %s: %v (remove that directory if it is left over from an interrupted run)", dir, err)
	}
	return dir
}
