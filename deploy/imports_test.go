package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The import rules of docs/ARCHITECTURE.md ("What the tests enforce"), checked on every service package's own
// (non-test) imports as `go list` reports them in the root module.

const modulePrefix = "github.com/zoeaswarm/zoea/"

// domainPackages are the packages that hold each service's rules and declare its ports. Each may import the
// standard library, libs packages other than swarmbus, third-party libraries that are not transports or drivers,
// and its own service's other domain packages; allowed lists the forbidden imports a package still has, each with
// the reason (none today: the test fails while an allowance is listed that is no longer needed).
var domainPackages = map[string]struct{ allowed map[string]string }{
	"services/memory/internal/memory":      {},
	"services/composer/internal/compose":   {},
	"services/runner/internal/mysis":       {},
	"services/runner/internal/usage":       {},
	"services/runner/internal/lease":       {},
	"services/runner/internal/admin":       {},
	"services/composer/internal/policy":    {},
	"services/composer/internal/composing": {},
	"services/bus/internal/message":        {},
	"services/bus/internal/delivery":       {},
	"services/bus/internal/send":           {},
	"services/spacemolt-sim/internal/game": {},
}

// sharedAdapters are the adapters (by isAdapter) that a transport or another adapter of the same service may import
// all the same, each with the reason; every other adapter is imported only by the composition root (app), test
// support and tooling. A package under an adapter's internal/ directory (provider/internal/…) is shared by that
// adapter family alone, which Go's internal rule already enforces. The test fails while one is listed that nothing
// imports any more.
var sharedAdapters = map[string]string{
	"services/runner/internal/llm":              "the provider port: the request, reply and tool types every provider implements and the turn loop, the tool router and the preview speak",
	"services/runner/internal/memorypb":         "the conversions between the memory service's wire types and the runner's own, shared by everything that talks to memory and by the admin API's statuses",
	"services/runner/internal/tools":            "declares tools.Accounts and tools.Searcher, the ports memoryclient implements",
	"services/composer/internal/window":         "declares the Windows port memoryclient implements and the Relay grpcapi passes on unread; grpcapi gives the composing use case a window.Reader (its carry cache) per request",
	"services/composer/internal/o200k":          "the tokenizer, a library without I/O, which tokcache caches",
	"services/spacemolt-sim/internal/mcpserver": "holds SpaceMolt's v2 action table and result shaping (CallV2), which the HTTP API v2 (httpapi) serves as /mcp/v2 does, and the Guard whose per-address auth limit and restarts both endpoints share",
}

// pureLibs are libs packages a domain package builds on for its rules: they are held to the domain rule too.
var pureLibs = []string{"libs/memoryrules", "libs/errs", "libs/names", "libs/chat", "libs/text"}

// forbiddenInTransport says why a service's grpcapi package may not import pkg, or "" when it may: the transport
// converts and delegates, so it reaches databases and NATS only through the ports of the packages it calls, and it
// returns libs/errs errors, which libs/server maps to statuses in one place (no status or codes of its own).
func forbiddenInTransport(pkg string) string {
	switch {
	case pkg == "google.golang.org/grpc/status" || pkg == "google.golang.org/grpc/codes":
		return "gRPC statuses (errors are libs/errs errors; libs/server maps them)"
	case strings.HasPrefix(pkg, "github.com/jackc/pgx"), strings.HasPrefix(pkg, "github.com/nats-io/"),
		pkg == modulePrefix+"libs/swarmbus" || strings.HasPrefix(pkg, modulePrefix+"libs/swarmbus/"):
		return "a driver or the bus (reached through ports)"
	}
	return ""
}

// forbiddenInDomain says why a domain package may not import pkg, or "" when it may.
func forbiddenInDomain(pkg string) string {
	switch {
	case pkg == "google.golang.org/grpc" || strings.HasPrefix(pkg, "google.golang.org/grpc/"):
		return "gRPC (a transport)"
	case strings.HasPrefix(pkg, "google.golang.org/protobuf/"), strings.HasPrefix(pkg, "google.golang.org/genproto/"):
		return "protobuf (wire types)"
	case strings.HasPrefix(pkg, modulePrefix+"gen/"):
		return "generated protobuf messages (wire types)"
	case strings.HasPrefix(pkg, "github.com/jackc/pgx"), strings.HasPrefix(pkg, "github.com/jackc/pgconn"):
		return "pgx (a database driver)"
	case strings.HasPrefix(pkg, "github.com/nats-io/"):
		return "NATS (a message transport)"
	case pkg == modulePrefix+"libs/swarmbus" || strings.HasPrefix(pkg, modulePrefix+"libs/swarmbus/"):
		return "libs/swarmbus (the NATS adapter library)"
	}
	return ""
}

// isAdapter reports whether a service package is an adapter: any package under internal/ that is not the
// composition root (app), the transport (grpcapi), a domain package or test support (testkit, e2e). Commands (cmd/)
// are roots too, and tooling lives in the service's tooling module (services/<svc>/tools), whose load drivers may
// wire a grpcapi themselves.
func isAdapter(rel string) bool {
	svc, rest, ok := strings.Cut(strings.TrimPrefix(rel, "services/"), "/internal/")
	if !ok || svc == "" {
		return false
	}
	top, _, _ := strings.Cut(rest, "/")
	if _, domain := domainPackages[rel]; domain {
		return false
	}
	switch top {
	case "app", "grpcapi", "testkit", "e2e":
		return false
	}
	return true
}

func TestImportRuleClassifiers(t *testing.T) {
	for pkg, bad := range map[string]bool{
		"google.golang.org/grpc": true, "google.golang.org/grpc/codes": true, "google.golang.org/protobuf/proto": true,
		modulePrefix + "gen/go/zoea/memory/v1": true, "github.com/jackc/pgx/v5/pgxpool": true, "github.com/nats-io/nats.go": true,
		modulePrefix + "libs/swarmbus": true, modulePrefix + "libs/errs": false, modulePrefix + "libs/chat": false,
		"github.com/google/uuid": false, "context": false, "github.com/grpc-ecosystem/x": false,
	} {
		if got := forbiddenInDomain(pkg) != ""; got != bad {
			t.Errorf("forbiddenInDomain(%q) = %v, want %v", pkg, got, bad)
		}
	}
	for pkg, bad := range map[string]bool{
		"google.golang.org/grpc/status": true, "google.golang.org/grpc/codes": true, modulePrefix + "libs/swarmbus": true,
		"github.com/nats-io/nats.go/jetstream": true, "github.com/jackc/pgx/v5": true,
		"google.golang.org/grpc": false, modulePrefix + "gen/go/zoea/bus/v1": false, modulePrefix + "libs/errs": false,
	} {
		if got := forbiddenInTransport(pkg) != ""; got != bad {
			t.Errorf("forbiddenInTransport(%q) = %v, want %v", pkg, got, bad)
		}
	}
	for rel, want := range map[string]bool{
		"services/composer/internal/memoryclient": true, "services/runner/internal/provider/openai": true,
		"services/composer/internal/window": true, "services/runner/internal/natsbus": true,
		"services/composer/internal/grpcapi": false, "services/memory/internal/app": false, "services/memory/internal/memory": false,
		"services/runner/internal/testkit/testenv": false, "services/memory/tools/benchkit": false,
		"services/runner/internal/e2e": false, "services/composer/tools/cmd/composeload": false, "libs/server": false,
		"services/runner/internal/tools": true,
	} {
		if got := isAdapter(rel); got != want {
			t.Errorf("isAdapter(%q) = %v, want %v", rel, got, want)
		}
	}
}

// libPackages maps the given libs packages (paths relative to the repository root) to their non-test imports.
func libPackages(t *testing.T, rels []string) map[string][]string {
	t.Helper()
	args := []string{"list", "-f", `{{.ImportPath}}|{{join .Imports " "}}`}
	for _, rel := range rels {
		args = append(args, "./"+rel)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", rels, err)
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, imports, _ := strings.Cut(line, "|")
		pkgs[strings.TrimPrefix(path, modulePrefix)] = strings.Fields(imports)
	}
	for _, rel := range rels {
		if _, ok := pkgs[rel]; !ok {
			t.Fatalf("go list did not list %s", rel)
		}
	}
	return pkgs
}

// servicePackages maps each service package (path relative to the repository root) to its non-test imports.
func servicePackages(t *testing.T) map[string][]string {
	t.Helper()
	root := repoRoot(t)
	args := []string{"list", "-f", `{{.ImportPath}}|{{join .Imports " "}}`}
	for _, svc := range zoeaServices {
		args = append(args, "./services/"+svc.name+"/...")
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, imports, _ := strings.Cut(line, "|")
		pkgs[strings.TrimPrefix(path, modulePrefix)] = strings.Fields(imports)
	}
	if len(pkgs) < 40 {
		t.Fatalf("go list found only %d service packages", len(pkgs))
	}
	return pkgs
}

func TestImportRules(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over every service (skipped with -short only)")
	}
	pkgs := servicePackages(t)
	t.Run("domain packages import no transport, wire types or driver", func(t *testing.T) {
		for rel, d := range domainPackages {
			imports, ok := pkgs[rel]
			if !ok {
				t.Errorf("domain package %s does not exist (moved? update domainPackages and docs/ARCHITECTURE.md)", rel)
				continue
			}
			for _, imp := range imports {
				why := forbiddenInDomain(imp)
				if why == "" {
					continue
				}
				if _, allowed := d.allowed[imp]; allowed {
					continue
				}
				t.Errorf("%s imports %s: a domain package may not import %s", rel, imp, why)
			}
			for imp := range d.allowed {
				if !slices.Contains(imports, imp) {
					t.Errorf("%s no longer imports %s: remove the allowance (and its line in docs/ARCHITECTURE.md)", rel, imp)
				}
			}
		}
	})
	t.Run("the libs the domain builds on are pure too", func(t *testing.T) {
		pkgs := libPackages(t, pureLibs)
		for _, rel := range pureLibs {
			for _, imp := range pkgs[rel] {
				if why := forbiddenInDomain(imp); why != "" {
					t.Errorf("%s imports %s: a package the domain builds on may not import %s", rel, imp, why)
				}
			}
		}
	})
	t.Run("transports convert and delegate", func(t *testing.T) {
		transports := 0
		for rel, imports := range pkgs {
			if _, rest, ok := strings.Cut(rel, "/internal/"); !ok || (rest != "grpcapi" && !strings.HasPrefix(rest, "grpcapi/")) {
				continue
			}
			transports++
			for _, imp := range imports {
				if why := forbiddenInTransport(imp); why != "" {
					t.Errorf("%s imports %s: a transport may not import %s", rel, imp, why)
				}
			}
		}
		if transports < 4 {
			t.Fatalf("only %d grpcapi packages found", transports)
		}
	})
	t.Run("memory requests are validated by one package", func(t *testing.T) {
		// The real service's domain and its in-memory fake both validate with libs/memoryrules (no copy to drift).
		fake := libPackages(t, []string{"libs/testsupport/memfake"})["libs/testsupport/memfake"]
		for rel, imports := range map[string][]string{"services/memory/internal/memory": pkgs["services/memory/internal/memory"], "libs/testsupport/memfake": fake} {
			if !slices.Contains(imports, modulePrefix+"libs/memoryrules") {
				t.Errorf("%s does not validate with libs/memoryrules", rel)
			}
		}
	})
	t.Run("adapters import no grpcapi", func(t *testing.T) {
		adapters := 0
		for rel, imports := range pkgs {
			if !isAdapter(rel) {
				continue
			}
			adapters++
			svc, _, _ := strings.Cut(strings.TrimPrefix(rel, "services/"), "/")
			for _, imp := range imports {
				if strings.HasPrefix(imp, modulePrefix+"services/"+svc+"/internal/grpcapi") {
					t.Errorf("%s imports %s: adapters point inward (at the domain), never at the transport", rel, imp)
				}
			}
		}
		if adapters < 10 {
			t.Fatalf("only %d adapters classified: the classifier is broken", adapters)
		}
	})
	t.Run("transports and adapters import no other adapter", func(t *testing.T) {
		used := map[string]bool{}
		for rel, imports := range pkgs {
			_, rest, ok := strings.Cut(rel, "/internal/")
			transport := ok && (rest == "grpcapi" || strings.HasPrefix(rest, "grpcapi/"))
			if !transport && !isAdapter(rel) {
				continue
			}
			svc, _, _ := strings.Cut(strings.TrimPrefix(rel, "services/"), "/")
			for _, imp := range imports {
				dep, ok := strings.CutPrefix(imp, modulePrefix)
				if !ok || !strings.HasPrefix(dep, "services/"+svc+"/internal/") || !isAdapter(dep) {
					continue
				}
				if family, _, inside := strings.Cut(dep, "/internal/"+strings.SplitN(strings.TrimPrefix(dep, "services/"+svc+"/internal/"), "/", 2)[0]+"/internal/"); inside && strings.HasPrefix(rel, strings.TrimSuffix(family, "/")) {
					continue // shared inside one adapter family (provider/internal/…)
				}
				if _, shared := sharedAdapters[dep]; shared {
					used[dep] = true
					continue
				}
				kind := "an adapter"
				if transport {
					kind = "a transport"
				}
				t.Errorf("%s imports %s: %s reaches other adapters only through the ports the domain declares (or list it in sharedAdapters with the reason, and in docs/ARCHITECTURE.md)", rel, dep, kind)
			}
		}
		for dep := range sharedAdapters {
			if !used[dep] {
				t.Errorf("no transport or adapter imports %s any more: remove it from sharedAdapters (and docs/ARCHITECTURE.md)", dep)
			}
		}
	})
	t.Run("the simulator uses the shared config and server", func(t *testing.T) {
		// Telemetry comes with server.Start, which TestEveryServiceHasTheSkeleton requires of every Main.
		imports := pkgs["services/spacemolt-sim/internal/app"]
		for _, lib := range []string{"libs/config", "libs/server"} {
			if !slices.Contains(imports, modulePrefix+lib) {
				t.Errorf("services/spacemolt-sim/internal/app does not import %s", lib)
			}
		}
	})
}

// TestEveryServiceHasTheSkeleton checks the shape every services/<svc>/internal/app has: Main(ctx, args, version)
// for cmd/<svc>, which starts the process with server.Start (logger, configuration, telemetry: written once) and
// picks its subcommand with server.Subcommand, and an exported Run(ctx, cfg Config, opts Options) error whose
// Options carry Logger and Listener, which tests call with a loopback listener.
func TestEveryServiceHasTheSkeleton(t *testing.T) {
	root := repoRoot(t)
	for _, svc := range zoeaServices {
		t.Run(svc.name, func(t *testing.T) {
			dir := filepath.Join(root, "services", svc.name, "internal", "app")
			fset := token.NewFileSet()
			pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
				return !strings.HasSuffix(fi.Name(), "_test.go")
			}, 0)
			if err != nil {
				t.Fatal(err)
			}
			app, ok := pkgs["app"]
			if !ok {
				t.Fatalf("%s holds no package app", dir)
			}
			funcs, types := map[string]*ast.FuncDecl{}, map[string]*ast.TypeSpec{}
			for _, f := range app.Files {
				for _, d := range f.Decls {
					switch d := d.(type) {
					case *ast.FuncDecl:
						if d.Recv == nil {
							funcs[d.Name.Name] = d
						}
					case *ast.GenDecl:
						for _, s := range d.Specs {
							if ts, ok := s.(*ast.TypeSpec); ok {
								types[ts.Name.Name] = ts
							}
						}
					}
				}
			}
			if m := funcs["Main"]; m == nil || len(m.Type.Params.List) != 3 {
				t.Error("no Main(ctx, args, version)")
			}
			calls := map[string]bool{}
			for _, f := range app.Files {
				ast.Inspect(f, func(n ast.Node) bool {
					if c, ok := n.(*ast.CallExpr); ok {
						calls[types2string(c.Fun)] = true
					}
					return true
				})
			}
			for _, want := range []string{"server.Start", "server.Subcommand"} {
				if !calls[want] {
					t.Errorf("the app package never calls %s: the shared start-up is written once, in libs/server", want)
				}
			}
			run := funcs["Run"]
			if run == nil {
				t.Fatal("no exported Run")
			}
			var params []string
			for _, p := range run.Type.Params.List {
				for range max(len(p.Names), 1) {
					params = append(params, types2string(p.Type))
				}
			}
			if want := []string{"context.Context", "Config", "Options"}; !slices.Equal(params, want) {
				t.Errorf("Run takes %v, want %v", params, want)
			}
			if r := run.Type.Results; r == nil || len(r.List) != 1 || types2string(r.List[0].Type) != "error" {
				t.Error("Run does not return just an error")
			}
			opts, ok := types["Options"]
			if !ok {
				t.Fatal("no Options type")
			}
			st, ok := opts.Type.(*ast.StructType)
			if !ok {
				t.Fatal("Options is not a struct")
			}
			fields := map[string]string{}
			for _, f := range st.Fields.List {
				for _, n := range f.Names {
					fields[n.Name] = types2string(f.Type)
				}
			}
			if fields["Logger"] != "*slog.Logger" || fields["Listener"] != "net.Listener" {
				t.Errorf("Options has Logger %q and Listener %q, want *slog.Logger and net.Listener", fields["Logger"], fields["Listener"])
			}
		})
	}
}

// types2string prints the simple type expressions the skeleton check compares.
func types2string(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return types2string(e.X) + "." + e.Sel.Name
	case *ast.StarExpr:
		return "*" + types2string(e.X)
	}
	return "?"
}
