// Package testdep holds the one rule every Zoea test follows when something it needs from the machine (Postgres,
// a nats-server binary, a service binary) is not there: on a developer's machine the test is skipped and says what
// is missing and how to get it; in CI (CI=true) it fails, because there nothing may silently not run.
package testdep

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// InCI reports whether the tests run in CI: the CI variable is set to anything but a false value.
func InCI() bool {
	v := os.Getenv("CI")
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	return err != nil || b
}

// Missing ends the test because a dependency is missing: Skip on a developer's machine, Fatal in CI.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := "missing test dependency: " + fmt.Sprintf(format, args...)
	if InCI() {
		tb.Fatal(msg + " (CI=true: a missing dependency fails)")
		return // Fatal does not return; a recording TB's may
	}
	tb.Skip(msg + " (skipped; with CI=true this fails)")
}

// MissingMain is Missing for a TestMain, which has no testing.TB: it reports the missing dependency on stderr and
// returns the exit code for os.Exit — 0 on a developer's machine (the package's tests are skipped, and the message
// says so), 1 in CI.
func MissingMain(format string, args ...any) int {
	msg := "missing test dependency: " + fmt.Sprintf(format, args...)
	if InCI() {
		fmt.Fprintln(os.Stderr, msg+" (CI=true: a missing dependency fails)")
		return 1
	}
	fmt.Fprintln(os.Stderr, msg+" (every test of this package skipped; with CI=true this fails)")
	return 0
}
