package testdep_test

import (
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/testsupport/testdep"
)

// recorder is a testing.TB that records how a test ended instead of ending it.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()           {}
func (r *recorder) Skip(args ...any)  { r.skipped = args[0].(string) }
func (r *recorder) Fatal(args ...any) { r.failed = args[0].(string) }

func TestInCI(t *testing.T) {
	for v, want := range map[string]bool{"": false, "true": true, "1": true, "false": false, "0": false, "yes": true} {
		t.Setenv("CI", v)
		if got := testdep.InCI(); got != want {
			t.Errorf("CI=%q: InCI = %v, want %v", v, got, want)
		}
	}
}

func TestMissingSkipsLocallyAndFailsInCI(t *testing.T) {
	t.Setenv("CI", "")
	r := &recorder{TB: t}
	testdep.Missing(r, "no %s", "nats-server")
	if r.failed != "" || !strings.Contains(r.skipped, "no nats-server") {
		t.Fatalf("locally: skipped %q, failed %q; want a skip naming the dependency", r.skipped, r.failed)
	}
	t.Setenv("CI", "true")
	r = &recorder{TB: t}
	testdep.Missing(r, "no %s", "Postgres")
	if r.skipped != "" || !strings.Contains(r.failed, "no Postgres") {
		t.Fatalf("in CI: skipped %q, failed %q; want a failure naming the dependency", r.skipped, r.failed)
	}
}

func TestMissingMainExitsZeroLocallyAndOneInCI(t *testing.T) {
	t.Setenv("CI", "")
	if code := testdep.MissingMain("Postgres: %s", "refused"); code != 0 {
		t.Fatalf("locally: exit %d, want 0 (skipped)", code)
	}
	t.Setenv("CI", "true")
	if code := testdep.MissingMain("Postgres: %s", "refused"); code != 1 {
		t.Fatalf("in CI: exit %d, want 1", code)
	}
}
