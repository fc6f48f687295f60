// Package svcbin builds Zoea's service binaries for tests, once per test process: a test that needs another
// service (each is its own module, so it cannot run in-process) starts the binary exactly as it is deployed. It is
// test support: it imports "testing" and no production binary may depend on it (deploy's architecture test checks).
package svcbin

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	mu       sync.Mutex
	built    = map[string]string{}
	buildDir string
)

// RepoRoot is the repository root: the directory holding the root module's go.mod, the first go.mod above this
// package's source.
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("svcbin: go.mod not found above " + file)
		}
		dir = parent
	}
}

// Build compiles services/<svc>/cmd/<svc> once per test process and returns the binary's path. ZOEA_TEST_BIN_DIR
// names a directory of prebuilt binaries (CI caches) to use instead. A binary that does not build fails the test:
// it never skips.
func Build(tb testing.TB, svc string) string {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[svc]; ok {
		return p
	}
	if dir := os.Getenv("ZOEA_TEST_BIN_DIR"); dir != "" {
		p := filepath.Join(dir, svc)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			built[svc] = p
			return p
		}
	}
	if buildDir == "" {
		// Shared by every test of the process, so it outlives any one test's TempDir.
		d, err := os.MkdirTemp("", "zoea-testbin-")
		if err != nil {
			tb.Fatal(err)
		}
		buildDir = d
	}
	out := filepath.Join(buildDir, svc)
	cmd := exec.Command("go", "build", "-o", out, "./services/"+svc+"/cmd/"+svc)
	cmd.Dir = RepoRoot(tb)
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("svcbin: build services/%s/cmd/%s: %v\n%s", svc, svc, err, b)
	}
	built[svc] = out
	return out
}

// Clean removes the binaries Build compiled; call it from TestMain after m.Run.
func Clean() {
	mu.Lock()
	defer mu.Unlock()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
		buildDir = ""
		clear(built)
	}
}

// LoggedAddr returns the addr of the first JSON log line in logs whose msg is msg (libs/server's "grpc server
// listening", the simulator's "http server listening"), or "". A test starts a service with
// ZOEA_LISTEN_ADDR=127.0.0.1:0 and reads the port it bound from its log: a port picked by the test and freed
// before the service binds it can be taken by another test process in between; a port the service bound cannot.
func LoggedAddr(logs, msg string) string {
	for _, line := range strings.Split(logs, "\n") {
		var rec struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == msg && rec.Addr != "" {
			return rec.Addr
		}
	}
	return ""
}
