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

// TestServerBinariesCarryNoTestOrBenchCode lists every package each server binary links (go list -deps, in the root
// module as the Dockerfile builds it) and fails when one is test or benchmark support.
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

// TestToolingStaysOutOfTheServices holds the split between each service, which builds only what ships, and its
// tooling, services/<svc>/tools (benchmarks, load drivers, replays, the fault suite): no package of a service — its
// tests included — imports a tooling package, the service's cmd/ holds only its server, and no benchkit package is
// left outside tools/. They share the root module, so this import rule (not a module boundary) is what keeps a
// benchmark's helpers out of a server's tests.
func TestToolingStaysOutOfTheServices(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over every service (skipped with -short only)")
	}
	root := repoRoot(t)
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
				if _, tooling := toolingModule(pkg); tooling {
					continue // the tools may import what they measure
				}
				if strings.HasPrefix(pkg, modulePrefix+"services/"+svc.name+"/cmd/") && pkg != server {
					t.Errorf("%s: the service's cmd/ holds only its server; tools go in services/%s/tools/cmd", pkg, svc.name)
				}
				if strings.Contains(pkg+"/", "/benchkit/") {
					t.Errorf("%s: benchmark tooling goes in services/%s/tools/benchkit", pkg, svc.name)
				}
				for _, imp := range strings.Fields(imports) {
					if owner, ok := toolingModule(imp); ok {
						t.Errorf("%s imports %s (or its tests do): service packages never import tooling (%s's)", pkg, imp, owner)
					}
				}
			}
		})
	}
}

// TestCLILinksNoServerCode: the commander's CLI (cmd/zoea, the binary every user runs and the zoea image ships) links
// neither the Postgres driver nor nats-server. zoea dev reaches Postgres through the memory binary
// (`memory migrate -create-database`) and runs its embedded JetStream fallback as a child process (cmd/zoea/devnats),
// so the CLI links only what it calls (issue 43: 570 packages before, the servers' 462–564).
func TestCLILinksNoServerCode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the CLI (skipped with -short only)")
	}
	deps := goListDeps(t, "./cmd/zoea")
	if !slices.Contains(deps, modulePrefix+"cmd/zoea") {
		t.Fatalf("go list -deps did not list the CLI itself: %q", deps)
	}
	for _, pkg := range deps {
		for _, banned := range []struct{ prefix, what string }{
			{"github.com/jackc/", "the Postgres driver (pgx and its parts): the memory binary creates, drops and migrates the database"},
			{"github.com/nats-io/nats-server/", "nats-server: the embedded fallback runs as cmd/zoea/devnats"},
		} {
			if strings.HasPrefix(pkg, banned.prefix) {
				t.Errorf("cmd/zoea links %s, %s", pkg, banned.what)
			}
		}
	}
	// The fallback itself is where nats-server went: if it did not link it, this check would be looking at nothing.
	if !slices.Contains(goListDeps(t, "./cmd/zoea/devnats"), "github.com/nats-io/nats-server/v2/server") {
		t.Error("cmd/zoea/devnats does not link nats-server: where does zoea dev's embedded JetStream come from?")
	}
}

// goListDeps is `go list -deps pkg` in the root module.
func goListDeps(t *testing.T, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", pkg)
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr)
	}
	return strings.Fields(string(out))
}

// TestOnlyToolingLinksNATSServer: no service package and no libs package links nats-server, not even in its tests
// (they run it as a process: libs/testsupport/natstest builds the pinned version), so a service's behaviour is
// tested against the server it meets in production. The root module requires nats-server only for the tooling
// (chaos, swarmload) and zoea dev's embedded fallback, cmd/zoea/devnats (TestCLILinksNoServerCode keeps it out of the
// CLI itself), at the version the tests run (natstest.Version).
func TestOnlyToolingLinksNATSServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over every service (skipped with -short only)")
	}
	root := repoRoot(t)
	pin := natsServerPin(t)
	for _, r := range readModFile(t, filepath.Join(root, "go.mod")).Require {
		if r.Mod.Path == "github.com/nats-io/nats-server/v2" && r.Mod.Version != pin {
			t.Errorf("go.mod requires nats-server %s, the tests run %s (libs/testsupport/natstest/binary.go Version): keep them equal", r.Mod.Version, pin)
		}
	}
	cmd := exec.Command("go", "list", "-test", "-f", `{{.ImportPath}}|{{join .Deps " "}}`, "./libs/...", "./services/...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, "|")
		base, _, _ := strings.Cut(pkg, " ") // a test variant is "pkg [pkg.test]"
		if _, tooling := toolingModule(strings.TrimSuffix(base, ".test")); tooling {
			continue
		}
		checked++
		for _, dep := range strings.Fields(deps) {
			for _, banned := range linkedOnlyByTooling {
				if dep == banned || strings.HasPrefix(dep, banned+"/") {
					t.Errorf("%s links %s: its tests must run it as a process (libs/testsupport/natstest), not link it", pkg, dep)
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("go list listed only %d service and libs packages", checked)
	}
}

// linkedOnlyByTooling are modules that only tooling and zoea dev's fallback program (cmd/zoea/devnats) may link.
var linkedOnlyByTooling = []string{"github.com/nats-io/nats-server/v2"}

// TestOneSetOfDependencyVersions: a module whose packages both the root module and deploy's checks compile is at the
// same version in both, so deploy's tests (which run the services' code through go list and go build) see the versions
// that ship, and a bump in one go.mod that the other misses fails here instead of drifting.
func TestOneSetOfDependencyVersions(t *testing.T) {
	root := repoRoot(t)
	list := func(dir string) map[string]string {
		// The modules whose packages the module's code and tests compile: not every module its graph mentions
		// (go mod tidy keeps a requirement only where a package needs it).
		cmd := exec.Command("go", "list", "-deps", "-test", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}", "./...")
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps -test ./... in %s: %v", dir, err)
		}
		mods := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if p, v, ok := strings.Cut(line, " "); ok && v != "" {
				mods[p] = v
			}
		}
		return mods
	}
	shipped, checks := list(root), list(filepath.Join(root, "deploy"))
	shared := 0
	for p, v := range checks {
		if sv, ok := shipped[p]; ok {
			shared++
			if sv != v {
				t.Errorf("%s is %s in go.mod's build list and %s in deploy/go.mod's: keep one version (go get %s@<the newer> in the other)", p, sv, v, p)
			}
		}
	}
	if shared < 5 {
		t.Fatalf("only %d modules shared between the root module and deploy: the lists were not read", shared)
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
