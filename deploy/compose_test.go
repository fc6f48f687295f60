package deploy

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// composeService is what the compose file must contain, beyond README's servers.
type composeService struct {
	profile string // "" = default (started by plain `docker compose up`)
	oneShot bool   // runs to completion: no healthcheck, restart "no"
}

var composeServices = map[string]composeService{
	"postgres":       {},
	"nats":           {},
	"nats-provision": {oneShot: true},
	"migrate":        {oneShot: true},
	"seed":           {oneShot: true},
	"web":            {},
	"memory":         {},
	"composer":       {},
	"bus":            {},
	"runner":         {},
	"spacemolt-sim":  {},
	"zoea":           {profile: "cli", oneShot: true},
	"ollama":         {profile: "ollama"},
	"ollama-pull":    {profile: "ollama", oneShot: true},
	"otel-collector": {profile: "observability"},
	"jaeger":         {profile: "observability"},
	"prometheus":     {profile: "observability"},
	"grafana":        {profile: "observability"},
}

// noHealthcheck lists long-running services that cannot have a container health check, and why. Nothing may
// depend on them with service_healthy (checked below).
var noHealthcheck = map[string]string{
	"otel-collector": "the contrib image is FROM scratch: no shell, wget or healthcheck subcommand to run",
}

const devToken = "dev-admin-token-change-me"

// loadCompose loads docker-compose.yml the way `docker compose` does (schema validation, interpolation,
// normalisation), with only the given environment and profiles.
func loadCompose(t *testing.T, env map[string]string, profiles ...string) *types.Project {
	t.Helper()
	return loadComposeFiles(t, []string{"docker-compose.yml"}, env, profiles...)
}

// loadComposeFiles loads several compose files (paths relative to the repository root) as `docker compose -f … -f …`.
func loadComposeFiles(t *testing.T, files []string, env map[string]string, profiles ...string) *types.Project {
	t.Helper()
	root := repoRoot(t)
	var envList []string
	for k, v := range env {
		envList = append(envList, k+"="+v)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, filepath.Join(root, f))
	}
	opts, err := cli.NewProjectOptions(paths,
		cli.WithWorkingDirectory(root),
		cli.WithEnv(envList),
		cli.WithProfiles(profiles),
	)
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker-compose.yml does not load: %v", err)
	}
	return p
}

func TestComposeServicesAndProfiles(t *testing.T) {
	all := loadCompose(t, nil, "*")
	var got []string
	for name := range all.Services {
		got = append(got, name)
	}
	var want []string
	for name := range composeServices {
		want = append(want, name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("services (all profiles) = %v, want %v", got, want)
	}
	for name, spec := range composeServices {
		var wantProfiles []string
		if spec.profile != "" {
			wantProfiles = []string{spec.profile}
		}
		if p := all.Services[name].Profiles; !slices.Equal(p, wantProfiles) {
			t.Errorf("%s: profiles %v, want %v", name, p, wantProfiles)
		}
	}

	// Plain `docker compose up` starts exactly the default services.
	def := loadCompose(t, nil)
	for name, spec := range composeServices {
		_, enabled := def.Services[name]
		if enabled != (spec.profile == "") {
			t.Errorf("%s: enabled without profiles = %v, want %v", name, enabled, spec.profile == "")
		}
	}
	// Each profile on its own loads (optional dependencies on disabled services are tolerated).
	for _, profile := range []string{"cli", "ollama", "observability"} {
		p := loadCompose(t, nil, profile)
		for name, spec := range composeServices {
			if spec.profile == profile {
				if _, ok := p.Services[name]; !ok {
					t.Errorf("profile %s does not enable %s", profile, name)
				}
			}
		}
	}
}

func TestComposeHealthAndDependencies(t *testing.T) {
	p := loadCompose(t, nil, "*")
	healthy := map[string]bool{}
	for name, svc := range p.Services {
		spec := composeServices[name]
		hc := svc.HealthCheck
		hasHC := hc != nil && !hc.Disable && len(hc.Test) > 0 && hc.Test[0] != "NONE"
		healthy[name] = hasHC
		switch {
		case spec.oneShot:
			if svc.Restart != "no" {
				t.Errorf("%s is a one-shot job but restart is %q, want \"no\"", name, svc.Restart)
			}
		case noHealthcheck[name] != "":
			if hasHC {
				t.Errorf("%s now has a healthcheck: remove it from noHealthcheck", name)
			}
		case !hasHC:
			t.Errorf("%s runs for good but has no healthcheck", name)
		default:
			if svc.Restart != "unless-stopped" {
				t.Errorf("%s: restart %q, want unless-stopped", name, svc.Restart)
			}
		}
	}

	for name, svc := range p.Services {
		for dep, d := range svc.DependsOn {
			target, ok := p.Services[dep]
			if !ok {
				t.Errorf("%s depends on unknown service %s", name, dep)
				continue
			}
			switch d.Condition {
			case types.ServiceConditionHealthy:
				if !healthy[dep] {
					t.Errorf("%s waits for %s to be healthy, but %s has no healthcheck", name, dep, dep)
				}
			case types.ServiceConditionCompletedSuccessfully:
				if !composeServices[dep].oneShot {
					t.Errorf("%s waits for %s to complete, but %s is not a one-shot job", name, dep, dep)
				}
			default:
				t.Errorf("%s depends on %s with condition %q; want service_healthy or service_completed_successfully", name, dep, d.Condition)
			}
			// A dependency outside the dependant's profiles must be optional, or `docker compose up` fails.
			if !profilesCover(svc.Profiles, target.Profiles) && d.Required {
				t.Errorf("%s requires %s (profiles %v), which is not enabled with %s's profiles %v: set required: false", name, dep, target.Profiles, name, svc.Profiles)
			}
		}
	}

	// Debian 12's docker.io is Engine 20.10: compose refuses healthcheck.start_interval there ("feature require
	// Docker Engine v25 or later"), so no service may use it.
	for name, svc := range p.Services {
		if hc := svc.HealthCheck; hc != nil && hc.StartInterval != nil {
			t.Errorf("%s: healthcheck.start_interval needs Docker Engine 25+; docs/DEPLOY.md promises 20.10", name)
		}
	}
	// The CLI is a client: `docker compose --profile cli run --rm zoea …` must not start (and so re-run) the
	// dependency chain, whose migrate job is a one-shot.
	if deps := p.Services["zoea"].DependsOn; len(deps) != 0 {
		t.Errorf("the cli profile's zoea service depends on %v; a client must not pull the swarm up (or re-run migrate)", deps)
	}

	// The startup order docs/DEPLOY.md describes.
	wantDeps := map[string]map[string]string{
		"migrate":  {"postgres": types.ServiceConditionHealthy},
		"memory":   {"postgres": types.ServiceConditionHealthy, "migrate": types.ServiceConditionCompletedSuccessfully},
		"composer": {"memory": types.ServiceConditionHealthy},
		// No service may create the NATS resources: the provisioning job has made them before the bus and runner start.
		"nats-provision": {"nats": types.ServiceConditionHealthy},
		"bus":            {"nats": types.ServiceConditionHealthy, "nats-provision": types.ServiceConditionCompletedSuccessfully},
		"runner":         {"memory": types.ServiceConditionHealthy, "composer": types.ServiceConditionHealthy, "bus": types.ServiceConditionHealthy, "nats": types.ServiceConditionHealthy, "nats-provision": types.ServiceConditionCompletedSuccessfully, "spacemolt-sim": types.ServiceConditionHealthy, "ollama-pull": types.ServiceConditionCompletedSuccessfully},
		"ollama-pull":    {"ollama": types.ServiceConditionHealthy},
		"seed":           {"runner": types.ServiceConditionHealthy, "bus": types.ServiceConditionHealthy},
	}
	for name, deps := range wantDeps {
		for dep, cond := range deps {
			if got := p.Services[name].DependsOn[dep].Condition; got != cond {
				t.Errorf("%s depends on %s with %q, want %q", name, dep, got, cond)
			}
		}
	}
	if d := p.Services["runner"].DependsOn["ollama-pull"]; d.Required {
		t.Error("runner's dependency on ollama-pull must be required: false, or the default profile cannot start")
	}
}

func profilesCover(dependant, target []string) bool {
	if len(target) == 0 {
		return true // default services are always enabled
	}
	if len(dependant) == 0 {
		return false
	}
	for _, p := range dependant {
		if !slices.Contains(target, p) {
			return false
		}
	}
	return true
}

func TestComposeZoeaServices(t *testing.T) {
	p := loadCompose(t, nil, "*")
	root := repoRoot(t)
	for _, z := range zoeaServices {
		t.Run(z.name, func(t *testing.T) {
			svc, ok := p.Services[z.name]
			if !ok {
				t.Fatal("missing")
			}
			checkZoeaImage(t, root, svc, z.name)
			// The gRPC services' health checks ask liveness (the process serves), not readiness (which includes their
			// dependencies): a dependency down must not make a container unhealthy, or a later `docker compose up -d`
			// refuses to start what waits on it with service_healthy ("dependency failed to start: container
			// zoea-composer-1 is unhealthy") even once the dependency is back.
			wantHC := []string{"CMD", "/usr/local/bin/" + z.name, "healthcheck"}
			if z.grpc {
				wantHC = append(wantHC, "--liveness")
			}
			if svc.HealthCheck == nil || !slices.Equal(svc.HealthCheck.Test, wantHC) {
				t.Errorf("healthcheck %v, want %v (distroless has no shell; the binary probes itself)", healthTest(svc), wantHC)
			}
			if got := envValue(svc, "ZOEA_LISTEN_ADDR"); got != fmt.Sprintf(":%d", z.port) {
				t.Errorf("ZOEA_LISTEN_ADDR=%q, want :%d", got, z.port)
			}
			if !slices.ContainsFunc(svc.Ports, func(pc types.ServicePortConfig) bool {
				return pc.Target == uint32(z.port) && pc.Published == strconv.Itoa(z.port)
			}) {
				t.Errorf("port %d is not published as %d (README defaults)", z.port, z.port)
			}
			if got := envValue(svc, "ZOEA_ADMIN_TOKEN"); got != devToken {
				t.Errorf("ZOEA_ADMIN_TOKEN=%q, want the documented dev default %q", got, devToken)
			}
			checkHardening(t, svc)
		})
	}
	migrate := p.Services["migrate"]
	checkZoeaImage(t, root, migrate, "memory")
	if !slices.Equal(migrate.Command, types.ShellCommand{"migrate"}) {
		t.Errorf("migrate job command %v, want [migrate]", migrate.Command)
	}
	if migrate.Image != p.Services["memory"].Image {
		t.Errorf("migrate runs image %s, memory runs %s: they must be the same build", migrate.Image, p.Services["memory"].Image)
	}
	if envValue(migrate, "ZOEA_DATABASE_URL") != envValue(p.Services["memory"], "ZOEA_DATABASE_URL") {
		t.Error("migrate and memory use different ZOEA_DATABASE_URLs")
	}
	checkZoeaImage(t, root, p.Services["zoea"], "zoea")

	// The NATS provisioning job: the CLI image running `zoea nats provision`, in the default profile, with the
	// bus's and the runners' settings (it reads none of the admin token or the secret key).
	prov := p.Services["nats-provision"]
	checkZoeaImage(t, root, prov, "zoea")
	checkHardening(t, prov)
	if len(prov.Profiles) != 0 {
		t.Errorf("nats-provision runs only with profiles %v; plain `docker compose up` must run it", prov.Profiles)
	}
	if !slices.Equal(prov.Command, types.ShellCommand{"nats", "provision"}) {
		t.Errorf("nats-provision command %v, want [nats provision]", prov.Command)
	}
	if prov.Image != p.Services["zoea"].Image {
		t.Errorf("nats-provision runs image %s, the cli profile %s: they must be the same build", prov.Image, p.Services["zoea"].Image)
	}
	for _, k := range []string{"ZOEA_SWARM", "ZOEA_NATS_REPLICAS", "ZOEA_LEASE_TTL"} {
		for _, svc := range []string{"bus", "runner"} {
			if envValue(prov, k) != envValue(p.Services[svc], k) {
				t.Errorf("nats-provision %s=%q, %s has %q: provisioning must use the services' settings", k, envValue(prov, k), svc, envValue(p.Services[svc], k))
			}
		}
	}
	for _, k := range []string{"ZOEA_ADMIN_TOKEN", "ZOEA_SECRET_KEY"} {
		if envValue(prov, k) != "" {
			t.Errorf("nats-provision gets %s, which it does not use", k)
		}
	}

	// The seed job is what makes a plain `docker compose up` play: the CLI image running seed-demo, the command
	// zoea dev runs, in the default profile, against the compose services.
	seed := p.Services["seed"]
	checkZoeaImage(t, root, seed, "zoea")
	checkHardening(t, seed)
	if len(seed.Profiles) != 0 {
		t.Errorf("seed runs only with profiles %v; plain `docker compose up` must run it", seed.Profiles)
	}
	if !slices.Equal(seed.Command, types.ShellCommand{"seed-demo"}) {
		t.Errorf("seed command %v, want [seed-demo]", seed.Command)
	}
	if seed.Image != p.Services["zoea"].Image {
		t.Errorf("seed runs image %s, the cli profile %s: they must be the same build", seed.Image, p.Services["zoea"].Image)
	}
	for _, k := range []string{"ZOEA_RUNNER_ADDR", "ZOEA_BUS_ADDR", "ZOEA_ADMIN_TOKEN"} {
		if envValue(seed, k) == "" || envValue(seed, k) != envValue(p.Services["zoea"], k) {
			t.Errorf("seed %s=%q, want the CLI's %q", k, envValue(seed, k), envValue(p.Services["zoea"], k))
		}
	}
	if envValue(seed, "ZOEA_DEMO_MYSES") != "3" {
		t.Errorf("seed ZOEA_DEMO_MYSES=%q, want 3 as zoea dev", envValue(seed, "ZOEA_DEMO_MYSES"))
	}
}

// Postgres and NATS stay off the host unless asked for, so compose runs beside the local services README sets up;
// deploy/compose.host-ports.yml publishes them on loopback.
func TestComposeHostPortsAreOptIn(t *testing.T) {
	p := loadCompose(t, nil, "*")
	for _, name := range []string{"postgres", "nats"} {
		if ports := p.Services[name].Ports; len(ports) != 0 {
			t.Errorf("%s publishes %v by default; host ports for it belong in deploy/compose.host-ports.yml", name, ports)
		}
	}
	withPorts := loadComposeFiles(t, []string{"docker-compose.yml", "deploy/compose.host-ports.yml"}, nil)
	want := map[string][]uint32{"postgres": {5432}, "nats": {4222, 8222}}
	for name, targets := range want {
		svc := withPorts.Services[name]
		for _, target := range targets {
			if !slices.ContainsFunc(svc.Ports, func(pc types.ServicePortConfig) bool {
				return pc.Target == target && pc.Published == strconv.Itoa(int(target)) && pc.HostIP == "127.0.0.1"
			}) {
				t.Errorf("with deploy/compose.host-ports.yml, %s does not publish 127.0.0.1:%d:%d (got %v)", name, target, target, svc.Ports)
			}
		}
	}
	if len(withPorts.Services["memory"].Ports) != len(p.Services["memory"].Ports) {
		t.Error("the override file must touch only Postgres and NATS")
	}
}

// README and compose name the model the same way: ZOEA_OLLAMA_MODEL reaches the runner and the model pull.
func TestComposeModelVariableMatchesReadme(t *testing.T) {
	p := loadCompose(t, map[string]string{"ZOEA_OLLAMA_MODEL": "qwen3:1.7b"}, "*")
	if got := envValue(p.Services["runner"], "ZOEA_OLLAMA_MODEL"); got != "qwen3:1.7b" {
		t.Errorf("runner ZOEA_OLLAMA_MODEL=%q, want the caller's qwen3:1.7b", got)
	}
	if got := strings.Join(p.Services["ollama-pull"].Command, " "); got != "pull qwen3:1.7b" {
		t.Errorf("ollama-pull command %q, want pull qwen3:1.7b", got)
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "ZOEA_OLLAMA_MODEL") || strings.Contains(string(readme), "ZOEA_MODEL`") {
		t.Error("README must name the model variable compose reads, ZOEA_OLLAMA_MODEL (and not ZOEA_MODEL)")
	}
}

func healthTest(svc types.ServiceConfig) []string {
	if svc.HealthCheck == nil {
		return nil
	}
	return svc.HealthCheck.Test
}

// zoeaImageBuilders are the services that build each Zoea image; every other service that runs it only names it.
var zoeaImageBuilders = map[string]string{
	"memory": "memory", "composer": "composer", "runner": "runner", "bus": "bus", "spacemolt-sim": "spacemolt-sim",
	"zoea": "nats-provision",
}

// checkZoeaImage checks that svc runs zoea/<binary>: built by that image's one building service (zoeaImageBuilders)
// from its Dockerfile stage, or, for any other service, named only, never pulled.
func checkZoeaImage(t *testing.T, root string, svc types.ServiceConfig, binary string) {
	t.Helper()
	if !strings.HasPrefix(svc.Image, "zoea/"+binary+":") {
		t.Errorf("%s: image %s, want zoea/%s:<tag>", svc.Name, svc.Image, binary)
	}
	if zoeaImageBuilders[binary] != svc.Name {
		if svc.Build != nil {
			t.Errorf("%s builds zoea/%s too: only %s may (a second build of one tag leaves a dangling <none> image)", svc.Name, binary, zoeaImageBuilders[binary])
		}
		// Without it a missing image would be pulled from docker.io/zoea/<binary>: online, someone else's image.
		if svc.PullPolicy != types.PullPolicyNever {
			t.Errorf("%s: pull_policy %q, want never (the image is %s's build; never pull one of that name)", svc.Name, svc.PullPolicy, zoeaImageBuilders[binary])
		}
		return
	}
	b := svc.Build
	if b == nil {
		t.Errorf("%s: no build section", svc.Name)
		return
	}
	if filepath.Clean(b.Context) != root {
		t.Errorf("%s: build context %s, want the repository root", svc.Name, b.Context)
	}
	if b.Dockerfile != dockerfilePath {
		t.Errorf("%s: dockerfile %s, want %s", svc.Name, b.Dockerfile, dockerfilePath)
	}
	if b.Target != binary {
		t.Errorf("%s: build target %q, want %q (the Dockerfile's stage for that binary)", svc.Name, b.Target, binary)
	}
	if arg := b.Args["VERSION"]; arg == nil || !strings.Contains(*arg, "ZOEA_TAG") && *arg != "dev" {
		t.Errorf("%s: build arg VERSION=%v, want it to follow ZOEA_TAG", svc.Name, arg)
	}
	// Without it the first `up` pulls docker.io/zoea/<binary>: online, someone else's image would run.
	if svc.PullPolicy != types.PullPolicyBuild {
		t.Errorf("%s: pull_policy %q, want build (never pull an image of that name from a registry)", svc.Name, svc.PullPolicy)
	}
}

// Each image is built by one service: compose builds every service with a build section, so two of them naming the
// same image built it twice and left the first build as a dangling <none> image (three of them, on a real engine).
// The CLI profile's zoea service builds nothing, so `docker compose --profile cli run --rm zoea …` prints no build.
func TestComposeBuildsEachImageOnce(t *testing.T) {
	p := loadCompose(t, nil, "*")
	builders := map[string][]string{}
	for name, svc := range p.Services {
		if svc.Build != nil {
			builders[svc.Image] = append(builders[svc.Image], name)
		}
	}
	for image, names := range builders {
		if len(names) > 1 {
			slices.Sort(names)
			t.Errorf("image %s is built by %v: give one of them the build and let the others name the image", image, names)
		}
	}
	for name, svc := range p.Services {
		if svc.Build == nil && strings.HasPrefix(svc.Image, "zoea/") && len(builders[svc.Image]) == 0 {
			t.Errorf("%s runs %s, which no service builds", name, svc.Image)
		}
	}
	if zoea := p.Services["zoea"]; zoea.Build != nil {
		t.Error("the cli profile's zoea service builds its image: `--profile cli run` would print the build; let `up` build it")
	}
	if len(p.Services["nats-provision"].Profiles) != 0 {
		t.Error("nats-provision builds zoea/zoea, so it must be in the default profile (plain `up` builds the CLI's image)")
	}
}

func checkHardening(t *testing.T, svc types.ServiceConfig) {
	t.Helper()
	if !svc.ReadOnly {
		t.Errorf("%s: root filesystem is writable; want read_only: true", svc.Name)
	}
	if !slices.Contains(svc.CapDrop, "ALL") {
		t.Errorf("%s: cap_drop %v, want ALL", svc.Name, svc.CapDrop)
	}
	if !slices.Contains(svc.SecurityOpt, "no-new-privileges:true") {
		t.Errorf("%s: security_opt %v lacks no-new-privileges:true", svc.Name, svc.SecurityOpt)
	}
}

func envValue(svc types.ServiceConfig, key string) string {
	if v := svc.Environment[key]; v != nil {
		return *v
	}
	return ""
}

// No port may be reachable from other machines: everything binds to loopback.
func TestComposePortsBindLoopback(t *testing.T) {
	p := loadCompose(t, nil, "*")
	seen := map[string]string{}
	for name, svc := range p.Services {
		for _, pc := range svc.Ports {
			if pc.HostIP != "127.0.0.1" {
				t.Errorf("%s publishes %s:%s->%d: want host_ip 127.0.0.1", name, pc.HostIP, pc.Published, pc.Target)
			}
			if pc.Published == "" {
				t.Errorf("%s publishes container port %d on a random host port; pin it", name, pc.Target)
			}
			if other, dup := seen[pc.Published]; dup {
				t.Errorf("host port %s is published by both %s and %s", pc.Published, other, name)
			}
			seen[pc.Published] = name
		}
	}
}

// Every address a Zoea process is given names a compose service that listens there.
func TestComposeAddressesResolve(t *testing.T) {
	p := loadCompose(t, nil, "*")
	listens := map[string]map[string]bool{} // service -> container ports
	for name, svc := range p.Services {
		listens[name] = map[string]bool{}
		for _, pc := range svc.Ports {
			listens[name][strconv.Itoa(int(pc.Target))] = true
		}
		for _, e := range svc.Expose {
			listens[name][e] = true
		}
	}
	addrVars := []string{"ZOEA_MEMORY_ADDR", "ZOEA_COMPOSER_ADDR", "ZOEA_RUNNER_ADDR", "ZOEA_BUS_ADDR"}
	urlVars := []string{"ZOEA_NATS_URL", "ZOEA_SPACEMOLT_URL", "ZOEA_DATABASE_URL", "OLLAMA_HOST"}
	for name, svc := range p.Services {
		for _, k := range append(addrVars, urlVars...) {
			v := envValue(svc, k)
			if v == "" {
				continue
			}
			hostport := v
			if slices.Contains(urlVars, k) {
				u, err := url.Parse(v)
				if err != nil {
					t.Errorf("%s: %s=%q: %v", name, k, v, err)
					continue
				}
				hostport = u.Host
			}
			host, port, err := net.SplitHostPort(hostport)
			if err != nil {
				t.Errorf("%s: %s=%q: %v", name, k, v, err)
				continue
			}
			if _, ok := p.Services[host]; !ok {
				t.Errorf("%s: %s=%q names no compose service", name, k, v)
				continue
			}
			if !listens[host][port] {
				t.Errorf("%s: %s=%q, but %s does not publish or expose port %s", name, k, v, host, port)
			}
		}
	}
	// The services that talk to others have the addresses they need.
	need := map[string][]string{
		"runner":   {"ZOEA_MEMORY_ADDR", "ZOEA_COMPOSER_ADDR", "ZOEA_BUS_ADDR", "ZOEA_NATS_URL", "ZOEA_SPACEMOLT_URL"},
		"bus":      {"ZOEA_NATS_URL", "ZOEA_MEMORY_ADDR"},
		"composer": {"ZOEA_MEMORY_ADDR"},
		"memory":   {"ZOEA_DATABASE_URL", "ZOEA_SECRET_KEY"},
		"migrate":  {"ZOEA_DATABASE_URL"},
		"zoea":     {"ZOEA_RUNNER_ADDR", "ZOEA_BUS_ADDR", "ZOEA_MEMORY_ADDR", "ZOEA_ADMIN_TOKEN"},
	}
	for name, vars := range need {
		for _, k := range vars {
			if envValue(p.Services[name], k) == "" {
				t.Errorf("%s has no %s", name, k)
			}
		}
	}
}

// Secrets have documented dev defaults that one environment variable overrides everywhere, and the optional
// profiles are switched on by the environment the docs describe.
func TestComposeEnvironmentOverrides(t *testing.T) {
	p := loadCompose(t, map[string]string{
		"ZOEA_ADMIN_TOKEN":            "s3cret-token",
		"ZOEA_SECRET_KEY":             "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100",
		"POSTGRES_PASSWORD":           "pg-pass",
		"ZOEA_PROVIDER":               "ollama",
		"ZOEA_OLLAMA_MODEL":           "llama3.2:3b",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel-collector:4317",
		"ZOEA_TAG":                    "v9.9.9",
	}, "*")
	for name, svc := range p.Services {
		for k, v := range svc.Environment {
			if v != nil && (strings.Contains(*v, devToken) || strings.Contains(*v, "zoea-dev-password") || strings.Contains(*v, "000102030405060708090a0b0c0d0e0f")) {
				t.Errorf("%s: %s still holds a dev default after the override: %q", name, k, *v)
			}
		}
		if b := svc.Build; b != nil {
			if !strings.HasSuffix(svc.Image, ":v9.9.9") {
				t.Errorf("%s: image %s ignores ZOEA_TAG", name, svc.Image)
			}
			if v := b.Args["VERSION"]; v == nil || *v != "v9.9.9" {
				t.Errorf("%s: build arg VERSION=%v ignores ZOEA_TAG", name, v)
			}
		}
	}
	if got := envValue(p.Services["memory"], "ZOEA_SECRET_KEY"); !strings.HasPrefix(got, "ffeedd") {
		t.Errorf("memory ZOEA_SECRET_KEY=%q, want the override", got)
	}
	if got := envValue(p.Services["postgres"], "POSTGRES_PASSWORD"); got != "pg-pass" {
		t.Errorf("postgres POSTGRES_PASSWORD=%q, want pg-pass", got)
	}
	if got := envValue(p.Services["memory"], "ZOEA_DATABASE_URL"); !strings.Contains(got, ":pg-pass@postgres:5432/zoea") {
		t.Errorf("memory ZOEA_DATABASE_URL=%q does not use POSTGRES_PASSWORD", got)
	}
	if got := envValue(p.Services["runner"], "ZOEA_DEFAULT_PROVIDER"); got != "ollama" {
		t.Errorf("runner ZOEA_DEFAULT_PROVIDER=%q with ZOEA_PROVIDER=ollama, want ollama", got)
	}
	if got := p.Services["ollama-pull"].Command; !slices.Equal(got, types.ShellCommand{"pull", "llama3.2:3b"}) {
		t.Errorf("ollama-pull command %v, want [pull llama3.2:3b] with ZOEA_OLLAMA_MODEL set", got)
	}
	if got := envValue(p.Services["runner"], "ZOEA_OLLAMA_MODEL"); got != "llama3.2:3b" {
		t.Errorf("runner ZOEA_OLLAMA_MODEL=%q, want the model ollama-pull fetches", got)
	}
	for _, z := range zoeaServices {
		if z.name == "spacemolt-sim" {
			continue
		}
		if got := envValue(p.Services[z.name], "OTEL_EXPORTER_OTLP_ENDPOINT"); got != "http://otel-collector:4317" {
			t.Errorf("%s: OTEL_EXPORTER_OTLP_ENDPOINT=%q, want the value from the environment", z.name, got)
		}
	}

	// Defaults: no export unless asked, autopilot, the documented model.
	d := loadCompose(t, nil, "*")
	for _, z := range zoeaServices {
		if z.name == "spacemolt-sim" {
			continue
		}
		if v, ok := d.Services[z.name].Environment["OTEL_EXPORTER_OTLP_ENDPOINT"]; !ok || v == nil || *v != "" {
			t.Errorf("%s: OTEL_EXPORTER_OTLP_ENDPOINT must default to empty (telemetry off)", z.name)
		}
	}
	if got := envValue(d.Services["runner"], "ZOEA_DEFAULT_PROVIDER"); got != "autopilot" {
		t.Errorf("runner ZOEA_DEFAULT_PROVIDER defaults to %q, want autopilot (offline)", got)
	}
	if pull, model := d.Services["ollama-pull"].Command, envValue(d.Services["runner"], "ZOEA_OLLAMA_MODEL"); len(pull) != 2 || pull[1] != model {
		t.Errorf("by default ollama-pull fetches %v but the runner's ZOEA_OLLAMA_MODEL is %q", pull, model)
	}
	if got := envValue(d.Services["runner"], "OLLAMA_HOST"); got != "http://ollama:11434" {
		t.Errorf("runner OLLAMA_HOST defaults to %q, want http://ollama:11434", got)
	}
}

func TestComposeProfilesContent(t *testing.T) {
	p := loadCompose(t, nil, "*")
	root := repoRoot(t)

	if p.Services["ollama"].Image != p.Services["ollama-pull"].Image || !strings.HasPrefix(p.Services["ollama"].Image, "ollama/ollama") {
		t.Errorf("ollama-pull must use the ollama image's CLI: %s vs %s", p.Services["ollama-pull"].Image, p.Services["ollama"].Image)
	}
	if got := envValue(p.Services["ollama-pull"], "OLLAMA_HOST"); got != "http://ollama:11434" {
		t.Errorf("ollama-pull OLLAMA_HOST=%q, want http://ollama:11434", got)
	}
	if !slices.Contains(volumeTargets(p.Services["ollama"]), "/root/.ollama") {
		t.Error("ollama does not keep its models in a volume")
	}

	col := p.Services["otel-collector"]
	if !strings.HasPrefix(col.Image, "otel/opentelemetry-collector-contrib:") {
		t.Errorf("otel-collector image %s", col.Image)
	}
	mounted := false
	for _, v := range col.Volumes {
		if v.Source == filepath.Join(root, "deploy", "otel", "collector.yaml") && v.Target == "/etc/otelcol-contrib/config.yaml" && v.ReadOnly {
			mounted = true
		}
	}
	if !mounted {
		t.Error("otel-collector does not mount deploy/otel/collector.yaml read-only at /etc/otelcol-contrib/config.yaml")
	}
	if _, err := os.Stat(filepath.Join(root, "deploy", "otel", "collector.yaml")); err != nil {
		t.Error(err)
	}
	if !strings.HasPrefix(p.Services["jaeger"].Image, "jaegertracing/") {
		t.Errorf("jaeger image %s", p.Services["jaeger"].Image)
	}
	if !slices.ContainsFunc(p.Services["jaeger"].Ports, func(pc types.ServicePortConfig) bool { return pc.Target == 16686 }) {
		t.Error("jaeger does not publish its UI (16686)")
	}

	// Stateful infrastructure keeps its data in named volumes.
	for name, target := range map[string]string{"postgres": "/var/lib/postgresql/data", "nats": "/data"} {
		svc := p.Services[name]
		if !slices.Contains(volumeTargets(svc), target) {
			t.Errorf("%s: no volume at %s", name, target)
		}
	}
	nats := strings.Join(p.Services["nats"].Command, " ")
	for _, flag := range []string{"--jetstream", "--store_dir /data", "--http_port 8222"} {
		if !strings.Contains(nats, flag) {
			t.Errorf("nats command %q lacks %s", nats, flag)
		}
	}
	if hc := healthTest(p.Services["nats"]); !strings.Contains(strings.Join(hc, " "), ":8222/healthz") {
		t.Errorf("nats healthcheck %v does not probe the monitoring port's /healthz", hc)
	}
	if hc := healthTest(p.Services["postgres"]); len(hc) < 2 || hc[1] != "pg_isready" || !strings.Contains(strings.Join(hc, " "), "-h 127.0.0.1") {
		t.Errorf("postgres healthcheck %v, want pg_isready over TCP (-h 127.0.0.1): the init-time server listens on the socket only", hc)
	}
	if got := envValue(p.Services["postgres"], "POSTGRES_DB"); got != "zoea" {
		t.Errorf("POSTGRES_DB=%q, want zoea", got)
	}
}

func volumeTargets(svc types.ServiceConfig) []string {
	var out []string
	for _, v := range svc.Volumes {
		out = append(out, v.Target)
	}
	return out
}
