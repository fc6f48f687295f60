package natstest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/zoeaswarm/zoea/libs/testsupport/testdep"
)

// Version is the nats-server the tests run: the one place it is pinned (.ci/check-pins.sh checks that the module
// proxy serves it; deploy's TestNATSConfigAcceptedByServer reads it from here).
const Version = "v2.15.2"

// Module is the Go package Binary installs.
const Module = "github.com/nats-io/nats-server/v2"

// BinaryEnv names a nats-server binary of Version to use instead of the one Binary builds (an absolute path).
const BinaryEnv = "ZOEA_TEST_NATS_SERVER_BIN"

var binary struct {
	once sync.Once
	path string
	err  error
}

// Binary returns the nats-server of Version the tests run: $ZOEA_TEST_NATS_SERVER_BIN if set, otherwise the one
// in the user's cache dir (<cache>/zoea/nats-server-<Version>/nats-server), which the first test on the machine
// builds with `go install` (one build per machine: a file lock keeps parallel test binaries from building it
// twice). Not getting it is testdep.Missing: skipped locally, a failure in CI.
func Binary(tb testing.TB) string {
	tb.Helper()
	binary.once.Do(func() { binary.path, binary.err = findBinary() })
	if binary.err != nil {
		testdep.Missing(tb, "natstest: nats-server %s: %v", Version, binary.err)
	}
	return binary.path
}

func findBinary() (string, error) {
	if bin := os.Getenv(BinaryEnv); bin != "" {
		if !filepath.IsAbs(bin) {
			return "", fmt.Errorf("%s=%q must be an absolute path", BinaryEnv, bin)
		}
		out, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("%s=%s: %v (unset it to let the tests build one)", BinaryEnv, bin, err)
		}
		if !strings.Contains(string(out), Version) {
			return "", fmt.Errorf("%s=%s is %s, the tests pin %s (unset it to let the tests build one)", BinaryEnv, bin, strings.TrimSpace(string(out)), Version)
		}
		return bin, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache dir to build it into (%v): set %s to a nats-server %s binary", err, BinaryEnv, Version)
	}
	dir := filepath.Join(cache, "zoea", "nats-server-"+Version)
	bin := filepath.Join(dir, "nats-server")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(dir, "build.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(bin); err == nil { // another test binary built it while this one waited for the lock
		return bin, nil
	}
	gobin, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(gobin)
	fmt.Fprintf(os.Stderr, "natstest: building nats-server %s into %s (once per machine; the first time takes a minute or two)\n", Version, dir)
	cmd := exec.Command("go", "install", Module+"@"+Version)
	// Outside any module or workspace, with the flags of neither: the pinned module version as the proxy serves it.
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=", "CGO_ENABLED=0")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install %s@%s failed (%v): %s\nrun it by hand with GOBIN=%s, or set %s to such a binary",
			Module, Version, err, strings.TrimSpace(string(out)), dir, BinaryEnv)
	}
	if err := os.Rename(filepath.Join(gobin, "nats-server"), bin); err != nil {
		return "", err
	}
	return bin, nil
}
