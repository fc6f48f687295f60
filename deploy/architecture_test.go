package deploy

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// forbiddenInBinary says why a package must not be linked into a production server binary, or "" when it may be.
// Test support lives in testkit packages (they may import "testing"), benchmark and load tooling in benchkit
// packages beside their own cmd/<tool>; see docs/ARCHITECTURE.md.
func forbiddenInBinary(pkg string) string {
	switch {
	case pkg == "testing" || strings.HasPrefix(pkg, "testing/"):
		return "the standard library's test support"
	case strings.Contains(pkg+"/", "/testkit/"):
		return "a testkit package (test-only support)"
	case strings.Contains(pkg+"/", "/benchkit/"):
		return "a benchkit package (benchmark tooling)"
	}
	return ""
}

func TestForbiddenInBinary(t *testing.T) {
	for pkg, bad := range map[string]bool{
		"testing": true, "testing/synctest": true, "github.com/zoeaswarm/zoea/libs/testkit/svcbin": true,
		"github.com/zoeaswarm/zoea/services/runner/internal/testkit/testenv":  true,
		"github.com/zoeaswarm/zoea/services/memory/internal/benchkit/seed":    true,
		"github.com/zoeaswarm/zoea/services/memory/internal/benchkit":         true,
		"github.com/zoeaswarm/zoea/services/memory/internal/pgstore":          false,
		"github.com/zoeaswarm/zoea/services/composer/internal/compose":        false,
		"github.com/zoeaswarm/zoea/libs/server":                               false,
		"github.com/zoeaswarm/zoea/services/runner/internal/testkitchen/menu": false,
	} {
		if got := forbiddenInBinary(pkg) != ""; got != bad {
			t.Errorf("forbiddenInBinary(%q) = %v, want %v", pkg, got, bad)
		}
	}
}

// TestServerBinariesCarryNoTestOrBenchCode lists every package each server binary links (go list -deps, through
// go.work as the Dockerfile builds it) and fails when one is test or benchmark support.
func TestServerBinariesCarryNoTestOrBenchCode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over every service (skipped with -short only)")
	}
	root := repoRoot(t)
	for _, svc := range zoeaServices {
		t.Run(svc.name, func(t *testing.T) {
			cmd := exec.Command("go", "list", "-deps", "./services/"+svc.name+"/cmd/"+svc.name)
			cmd.Dir = root
			out, err := cmd.Output()
			if err != nil {
				var stderr []byte
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = ee.Stderr
				}
				t.Fatalf("go list -deps: %v\n%s", err, stderr)
			}
			deps := strings.Fields(string(out))
			if !slices.Contains(deps, "github.com/zoeaswarm/zoea/services/"+svc.name+"/cmd/"+svc.name) {
				t.Fatalf("go list -deps did not list the binary itself: %q", deps)
			}
			for _, pkg := range deps {
				if why := forbiddenInBinary(pkg); why != "" {
					t.Errorf("services/%s/cmd/%s links %s, %s", svc.name, svc.name, pkg, why)
				}
			}
		})
	}
}
