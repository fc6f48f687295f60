package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
)

// checkPorts are the host ports compose-check.sh publishes, by service and container port, and the variable that
// picks each.
var checkPorts = []struct {
	service  string
	target   uint32
	variable string
}{
	{"spacemolt-sim", 7100, "ZOEA_CHECK_SIM_PORT"},
	{"web", 7200, "ZOEA_CHECK_WEB_PORT"},
}

// checkScriptDefaults reads compose-check.sh's `export VAR="${VAR:-N}"` defaults.
func checkScriptDefaults(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy/docker/compose-check.sh"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^export (ZOEA_CHECK_\w+)="\$\{(ZOEA_CHECK_\w+):-(\d+)\}"$`).FindAllStringSubmatch(string(b), -1) {
		if m[1] == m[2] {
			got[m[1]] = m[3]
		}
	}
	return got
}

// make compose-check runs as its own project beside a developer's `make dev` or `docker compose up`: with its override
// file, no service may publish a host port the plain file publishes (the web console's 7200 did), and the two ports
// the check reads (the simulator's admin, the web console) are published on loopback where the script looks.
func TestComposeCheckTakesNoDefaultHostPort(t *testing.T) {
	defaults := checkScriptDefaults(t)
	plain := loadCompose(t, nil, "*")
	taken := map[string]string{}
	for name, svc := range plain.Services {
		for _, pc := range svc.Ports {
			taken[pc.Published] = name
		}
	}
	for _, env := range []map[string]string{nil, {"ZOEA_CHECK_SIM_PORT": "7490", "ZOEA_CHECK_WEB_PORT": "7491"}} {
		check := loadComposeFiles(t, []string{"docker-compose.yml", "deploy/docker/compose-check.yml"}, env, "cli")
		for name, svc := range check.Services {
			for _, pc := range svc.Ports {
				if owner, ok := taken[pc.Published]; ok {
					t.Errorf("env %v: in the check's project %s publishes host port %s, which %s publishes in a plain `docker compose up`", env, name, pc.Published, owner)
				}
				if pc.HostIP != "127.0.0.1" {
					t.Errorf("env %v: in the check's project %s publishes %s on %q, want 127.0.0.1", env, name, pc.Published, pc.HostIP)
				}
			}
		}
		for _, c := range checkPorts {
			want := env[c.variable]
			if want == "" {
				want = defaults[c.variable]
			}
			if want == "" {
				t.Fatalf("compose-check.sh does not export %s with a default", c.variable)
			}
			ports := check.Services[c.service].Ports
			if !slices.ContainsFunc(ports, func(pc types.ServicePortConfig) bool { return pc.Target == c.target && pc.Published == want }) {
				t.Errorf("env %v: the check's %s publishes %v, want 127.0.0.1:%s:%d (%s, the port compose-check.sh reads)", env, c.service, ports, want, c.target, c.variable)
			}
			if len(ports) != 1 {
				t.Errorf("env %v: the check's %s publishes %d ports, want only %s's", env, c.service, len(ports), c.variable)
			}
		}
	}
	for v, p := range defaults {
		if n, err := strconv.Atoi(p); err != nil || n < 1024 || n > 65535 {
			t.Errorf("compose-check.sh's %s defaults to %s, not an unprivileged port", v, p)
		}
	}
}
