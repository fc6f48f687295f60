package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// forbiddenInBinary says why a package must not be linked into a production server binary, or "" when it may be.
// Test support lives in the test-support module libs/testsupport and in testkit packages (they may import
// "testing"), benchmark, load and fault tooling in each
// service's tooling module, services/<svc>/tools (its benchkit packages and its cmd/<tool>); see
// docs/ARCHITECTURE.md.
func forbiddenInBinary(pkg string) string {
	switch {
	case pkg == "testing" || strings.HasPrefix(pkg, "testing/"):
		return "the standard library's test support"
	case strings.HasPrefix(pkg+"/", modulePrefix+"libs/testsupport/"):
		return "a package of the test-support module (libs/testsupport: contract suite, fakes, test servers)"
	case strings.Contains(pkg+"/", "/testkit/"):
		return "a testkit package (test-only support)"
	case strings.Contains(pkg+"/", "/benchkit/"):
		return "a benchkit package (benchmark tooling)"
	}
	if svc, ok := toolingModule(pkg); ok {
		return "a package of " + svc + "'s tooling module (services/" + svc + "/tools: benchmark, load and fault tooling)"
	}
	return ""
}

// toolingModule reports whether pkg belongs to a service's tooling module, services/<svc>/tools, and whose. The
// runner's services/runner/internal/tools (its tool router) is not one: only the directory right under the service.
func toolingModule(pkg string) (svc string, ok bool) {
	rest, ok := strings.CutPrefix(pkg, modulePrefix+"services/")
	if !ok {
		return "", false
	}
	svc, rest, _ = strings.Cut(rest, "/")
	return svc, svc != "" && (rest == "tools" || strings.HasPrefix(rest, "tools/"))
}

func TestForbiddenInBinary(t *testing.T) {
	for pkg, bad := range map[string]bool{
		"testing": true, "testing/synctest": true, "github.com/zoeaswarm/zoea/libs/testsupport/svcbin": true,
		"github.com/zoeaswarm/zoea/libs/testsupport/memorycontract": true, "github.com/zoeaswarm/zoea/libs/testsupport": true,
		"github.com/zoeaswarm/zoea/services/runner/internal/testkit/testenv":  true,
		"github.com/zoeaswarm/zoea/services/memory/internal/benchkit/seed":    true,
		"github.com/zoeaswarm/zoea/services/memory/tools/benchkit":            true,
		"github.com/zoeaswarm/zoea/services/runner/tools/cmd/chaos":           true,
		"github.com/zoeaswarm/zoea/services/composer/tools":                   true,
		"github.com/zoeaswarm/zoea/services/runner/internal/tools":            false,
		"github.com/zoeaswarm/zoea/services/runner/internal/tools/router":     false,
		"github.com/zoeaswarm/zoea/services/composer/toolsmith":               false,
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

// TestToolingStaysOutOfTheServices holds the split between each service module, which builds only what ships, and
// its tooling module services/<svc>/tools (benchmarks, load drivers, replays, the fault suite): no package of a
// service module — its tests included — imports a tooling module and no service go.mod requires one, so a service's
// go.mod lists only what its server and its tests need; the service's cmd/ holds only its server and no benchkit
// package is left in it; and every tooling module is in go.work, so make test, lint, bench and tidy (which loop over
// go.work) and the Dockerfile's workspace include it.
func TestToolingStaysOutOfTheServices(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over every service (skipped with -short only)")
	}
	root := repoRoot(t)
	used := workspaceModules(t, root)
	for _, svc := range zoeaServices {
		t.Run(svc.name, func(t *testing.T) {
			cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`,
				"./services/"+svc.name+"/...")
			cmd.Dir = root
			out, err := cmd.Output()
			if err != nil {
				var stderr []byte
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = ee.Stderr
				}
				t.Fatalf("go list: %v\n%s", err, stderr)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) < 3 {
				t.Fatalf("go list found only %d packages in services/%s", len(lines), svc.name)
			}
			server := modulePrefix + "services/" + svc.name + "/cmd/" + svc.name
			for _, line := range lines {
				pkg, imports, _ := strings.Cut(line, "|")
				if _, ok := toolingModule(pkg); ok {
					t.Fatalf("go list ./services/%s/... listed the tooling module's %s: the service and its tools must be separate modules", svc.name, pkg)
				}
				if strings.HasPrefix(pkg, modulePrefix+"services/"+svc.name+"/cmd/") && pkg != server {
					t.Errorf("%s: the service's cmd/ holds only its server; tools go in services/%s/tools/cmd", pkg, svc.name)
				}
				if strings.Contains(pkg+"/", "/benchkit/") {
					t.Errorf("%s: benchmark tooling goes in services/%s/tools/benchkit", pkg, svc.name)
				}
				for _, imp := range strings.Fields(imports) {
					if owner, ok := toolingModule(imp); ok {
						t.Errorf("%s imports %s (or its tests do): service packages never import a tooling module (%s's)", pkg, imp, owner)
					}
				}
			}
			mf := readModFile(t, filepath.Join(root, "services", svc.name, "go.mod"))
			for _, r := range mf.Require {
				if _, ok := toolingModule(r.Mod.Path); ok {
					t.Errorf("services/%s/go.mod requires the tooling module %s", svc.name, r.Mod.Path)
				}
			}
			tools := filepath.Join(root, "services", svc.name, "tools")
			if _, err := os.Stat(filepath.Join(tools, "go.mod")); err == nil {
				if !slices.Contains(used, "services/"+svc.name+"/tools") {
					t.Errorf("go.work does not use ./services/%s/tools: make test, lint and tidy would skip it", svc.name)
				}
			} else if _, err := os.Stat(tools); err == nil {
				t.Errorf("services/%s/tools exists without a go.mod: its packages would belong to the service module", svc.name)
			}
		})
	}
}

// linkedOnlyByTooling are modules that only tooling and the developer CLI may require: a service's go.mod and
// libs/go.mod list what ships and what their tests need, and their tests run these as processes instead (libs/testsupport/natstest
// runs a nats-server binary of the pinned version). cmd/zoea may require nats-server (zoea dev's embedded fallback),
// and so may the tooling modules (chaos, swarmload).
var linkedOnlyByTooling = []string{"github.com/nats-io/nats-server"}

// TestServicesAndLibsDoNotRequireNATSServer: no service module and not libs requires nats-server, directly or
// indirectly (go.mod lists every module a module's tests need, so one test importing it would bring it back). The
// modules that do link it (cmd/zoea, services/runner/tools) link the version the tests run (natstest.Version), so
// zoea dev's embedded server and the chaos suite's behave as the one every test ran against.
func TestServicesAndLibsDoNotRequireNATSServer(t *testing.T) {
	root := repoRoot(t)
	pin := natsServerPin(t)
	for _, dir := range []string{"cmd/zoea", "services/runner/tools"} {
		for _, r := range readModFile(t, filepath.Join(root, dir, "go.mod")).Require {
			if r.Mod.Path == "github.com/nats-io/nats-server/v2" && r.Mod.Version != pin {
				t.Errorf("%s/go.mod links nats-server %s, the tests run %s (libs/testsupport/natstest/binary.go Version): keep them equal", dir, r.Mod.Version, pin)
			}
		}
	}
	dirs := []string{"libs"}
	for _, svc := range zoeaServices {
		dirs = append(dirs, "services/"+svc.name)
	}
	for _, dir := range dirs {
		for _, r := range readModFile(t, filepath.Join(root, dir, "go.mod")).Require {
			for _, banned := range linkedOnlyByTooling {
				if r.Mod.Path == banned || strings.HasPrefix(r.Mod.Path, banned+"/") {
					t.Errorf("%s/go.mod requires %s %s: its tests must run it as a process (libs/testsupport/natstest), not link it", dir, r.Mod.Path, r.Mod.Version)
				}
			}
		}
	}
}

func readModFile(t *testing.T, gomod string) *modfile.File {
	t.Helper()
	b, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.ParseLax(gomod, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	return mf
}
