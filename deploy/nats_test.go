package deploy

import (
	"bytes"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// NATS authorization in the deployments. deploy/nats/nats.conf gives the bus and the runner their own users with
// swarmbus.Permissions (cmd/zoea TestDeployNATSConfig parses it with nats-server's loader and compares); here:
// nats-server accepts it, compose and the dev overlay mount it, every service that connects to NATS has credentials
// the server knows, and prod carries none in the repository.

// natsUsers are the services that connect to NATS, each as the user of its own name.
var natsUsers = []string{"bus", "runner"}

// natsProvisionUsers are the provisioning users of the two accounts, by the variable of the nats-provision job's
// URL that carries each.
var natsProvisionUsers = map[string]string{
	"ZOEA_NATS_PROVISION_BUS_URL":    "provision-bus",
	"ZOEA_NATS_PROVISION_RUNNER_URL": "provision-runner",
}

// allNATSUsers are every user deploy/nats/nats.conf has.
var allNATSUsers = []string{"bus", "runner", "provision-bus", "provision-runner"}

const natsConf = "deploy/nats/nats.conf"

// natsPasswordVar is the server variable of user's password (the '-' of provision-bus as '_').
func natsPasswordVar(user string) string {
	return "ZOEA_NATS_" + strings.ToUpper(strings.ReplaceAll(user, "-", "_")) + "_PASSWORD"
}

// nats-server itself checks the config (-t): the server the deployments run (the nats:2-alpine image, a current
// 2.x), built here from the version libs/testsupport/natstest pins, since the config uses settings older servers reject
// (sync_interval: Debian 12's 2.9 does not know it).
func TestNATSConfigAcceptedByServer(t *testing.T) {
	bin := natsServerBinary(t)
	conf := filepath.Join(repoRoot(t), natsConf)
	env := os.Environ()
	for _, u := range allNATSUsers {
		env = append(env, natsPasswordVar(u)+"=test-"+u)
	}
	cmd := exec.Command(bin, "-t", "-c", conf)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nats-server -t -c %s: %v\n%s", natsConf, err, out)
	}
	// The passwords really come from the environment: without them the server refuses to start.
	cmd = exec.Command(bin, "-t", "-c", conf)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "ZOEA_NATS_") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), natsPasswordVar(natsUsers[0])) {
		t.Fatalf("nats-server -t without the password variables: %v\n%s\nwant a refusal naming %s", err, out, natsPasswordVar(natsUsers[0]))
	}
}

// natsServerBinary is nats-server at the version the tests pin (natstest.Version in libs/testsupport/natstest/binary.go, read
// from there: this module does not import libs): $ZOEA_TEST_NATS_SERVER_BIN if set, as natstest takes it, otherwise
// a go install into a temp dir (the go command's build cache makes a second build a link only).
func natsServerBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("ZOEA_TEST_NATS_SERVER_BIN"); bin != "" {
		return bin
	}
	version := natsServerPin(t)
	gobin := t.TempDir()
	cmd := exec.Command("go", "install", "github.com/nats-io/nats-server/v2@"+version)
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=", "CGO_ENABLED=0")
	cmd.Dir = gobin
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install nats-server@%s (the version libs/testsupport/natstest pins): %v\n%s", version, err, out)
	}
	return filepath.Join(gobin, "nats-server")
}

// natsServerPin reads natstest.Version, the one place the tests' nats-server version is pinned.
func natsServerPin(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "libs", "testsupport", "natstest", "binary.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^const Version = "(v[0-9][^"]*)"`).FindSubmatch(b)
	if m == nil {
		t.Fatal(`libs/testsupport/natstest/binary.go has no line const Version = "v…": the nats-server pin moved`)
	}
	return string(m[1])
}

// JetStream acknowledges a write only once it is fsynced (sync_interval: always) in every NATS Zoea ships a config
// for: nats.conf, which compose and the dev overlay mount (TestComposeNATSAuth, TestK8sNATSAuth check the mounts),
// without a command-line flag overriding it, and the Helm values of the production cluster. With the server's
// default (fsync every 2 minutes) a power failure loses acknowledged broadcasts. cmd/zoea TestDeployNATSConfig
// checks the same file with nats-server's own loader (SyncAlways).
func TestNATSSyncAlways(t *testing.T) {
	root := repoRoot(t)
	for _, rel := range []string{natsConf, "deploy/k8s/overlays/dev/nats.conf"} {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		if !natsConfSyncAlways(string(b)) {
			t.Errorf("%s: want a jetstream block with sync_interval: always", rel)
		}
	}
	if !natsConfSyncAlways("jetstream {\n  sync_interval: always\n}\n") || natsConfSyncAlways("jetstream {\n  # sync_interval: always\n}\n") ||
		natsConfSyncAlways("jetstream {\n  sync_interval: 2m\n}\n") {
		t.Fatal("natsConfSyncAlways does not tell the setting from its absence")
	}

	p := loadCompose(t, nil, "*")
	for _, arg := range p.Services["nats"].Command {
		if strings.Contains(strings.ToLower(arg), "sync") {
			t.Errorf("compose nats command %v overrides the sync setting of %s", p.Services["nats"].Command, natsConf)
		}
	}
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		if nats := m.statefulSets["nats"]; nats != nil {
			for _, arg := range append(nats.Spec.Template.Spec.Containers[0].Command, nats.Spec.Template.Spec.Containers[0].Args...) {
				if strings.Contains(strings.ToLower(arg), "sync") {
					t.Errorf("%s nats args override the sync setting of %s", m.overlay, natsConf)
				}
			}
		}
	})

	var values struct {
		Config struct {
			Merge struct {
				JetStream struct {
					SyncInterval string `json:"sync_interval"`
				} `json:"jetstream"`
			} `json:"merge"`
		} `json:"config"`
	}
	readYAML(t, "deploy/k8s/external/nats-values.yaml", &values)
	if values.Config.Merge.JetStream.SyncInterval != "always" {
		t.Errorf("deploy/k8s/external/nats-values.yaml: config.merge.jetstream.sync_interval = %q, want always",
			values.Config.Merge.JetStream.SyncInterval)
	}
}

// natsConfSyncAlways reports whether a NATS config file has an uncommented sync_interval: always inside its
// jetstream block.
func natsConfSyncAlways(conf string) bool {
	var lines []string
	for line := range strings.Lines(conf) {
		if i := strings.IndexAny(line, "#"); i >= 0 {
			line = line[:i]
		}
		lines = append(lines, line)
	}
	m := regexp.MustCompile(`(?s)\bjetstream\s*[:=]?\s*\{([^}]*)\}`).FindStringSubmatch(strings.Join(lines, ""))
	return m != nil && regexp.MustCompile(`(?m)^\s*sync_interval\s*[:=]\s*"?always"?\s*$`).MatchString(m[1])
}

// The dev overlay's copy (kustomize reads files inside the overlay only) is the same file.
func TestNATSConfigCopiesIdentical(t *testing.T) {
	root := repoRoot(t)
	a, err := os.ReadFile(filepath.Join(root, natsConf))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "deploy/k8s/overlays/dev/nats.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("deploy/k8s/overlays/dev/nats.conf differs from %s: copy it", natsConf)
	}
	for _, u := range allNATSUsers {
		if !strings.Contains(string(a), "user: "+u+"\n") || !strings.Contains(string(a), "$"+natsPasswordVar(u)) {
			t.Errorf("%s lacks user %s with password $%s", natsConf, u, natsPasswordVar(u))
		}
	}
}

// Compose: NATS runs with the config and the passwords; the bus and the runner connect as their own users with the
// same passwords; no other service connects; overriding a password changes server and client together.
func TestComposeNATSAuth(t *testing.T) {
	for _, env := range []map[string]string{nil, {"ZOEA_NATS_BUS_PASSWORD": "own-bus", "ZOEA_NATS_RUNNER_PASSWORD": "own-runner",
		"ZOEA_NATS_PROVISION_BUS_PASSWORD": "own-pb", "ZOEA_NATS_PROVISION_RUNNER_PASSWORD": "own-pr"}} {
		p := loadCompose(t, env, "*")
		nats := p.Services["nats"]
		if !slices.Contains(nats.Command, "--config") || !slices.Contains(nats.Command, "/etc/nats/nats.conf") {
			t.Errorf("nats command %v does not load /etc/nats/nats.conf", nats.Command)
		}
		mounted := false
		for _, v := range nats.Volumes {
			if v.Target == "/etc/nats/nats.conf" && v.Source == filepath.Join(repoRoot(t), natsConf) && v.ReadOnly {
				mounted = true
			}
		}
		if !mounted {
			t.Errorf("nats does not mount %s read-only at /etc/nats/nats.conf: %+v", natsConf, nats.Volumes)
		}
		for name, svc := range p.Services {
			raw := envValue(svc, "ZOEA_NATS_URL")
			if raw == "" {
				if slices.Contains(natsUsers, name) {
					t.Errorf("%s has no ZOEA_NATS_URL", name)
				}
				continue
			}
			if !slices.Contains(natsUsers, name) {
				t.Errorf("%s connects to NATS but has no user in %s", name, natsConf)
				continue
			}
			u, err := url.Parse(raw)
			if err != nil {
				t.Errorf("%s ZOEA_NATS_URL: %v", name, err)
				continue
			}
			pw, ok := u.User.Password()
			want := envValue(nats, natsPasswordVar(name))
			if u.User.Username() != name || !ok || pw == "" || pw != want {
				t.Errorf("%s ZOEA_NATS_URL user %q password %q, want user %s with the nats service's %s (%q)",
					name, u.User.Username(), pw, name, natsPasswordVar(name), want)
			}
			if env != nil && pw != env[natsPasswordVar(name)] {
				t.Errorf("%s: %s=%q does not reach its URL (password %q)", name, natsPasswordVar(name), env[natsPasswordVar(name)], pw)
			}
		}
		// The provisioning job connects as the two provisioning users, with the passwords the server reads.
		prov := p.Services["nats-provision"]
		for urlVar, user := range natsProvisionUsers {
			u, err := url.Parse(envValue(prov, urlVar))
			if err != nil {
				t.Errorf("nats-provision %s: %v", urlVar, err)
				continue
			}
			pw, ok := u.User.Password()
			want := envValue(nats, natsPasswordVar(user))
			if u.User.Username() != user || !ok || pw == "" || pw != want || u.Host != "nats:4222" {
				t.Errorf("nats-provision %s has user %q password %q host %s, want user %s with the nats service's %s (%q) at nats:4222",
					urlVar, u.User.Username(), pw, u.Host, user, natsPasswordVar(user), want)
			}
			if env != nil && pw != env[natsPasswordVar(user)] {
				t.Errorf("nats-provision: %s=%q does not reach %s", natsPasswordVar(user), env[natsPasswordVar(user)], urlVar)
			}
		}
	}
}

// k8s: bus and runner read ZOEA_NATS_URL from Secret zoea-nats; the dev overlay generates it with URLs whose
// passwords are the ones its NATS (running nats.conf) reads; prod generates none and puts no NATS URL in a ConfigMap.
func TestK8sNATSAuth(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, m *manifests) {
		for _, name := range natsUsers {
			d := m.deployments[name]
			if d == nil {
				t.Fatalf("no Deployment %s", name)
			}
			e := containerEnvVar(d.Spec.Template.Spec.Containers[0], "ZOEA_NATS_URL")
			if e == nil || e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
				!strings.HasPrefix(e.ValueFrom.SecretKeyRef.Name, "zoea-nats") || e.ValueFrom.SecretKeyRef.Key != name+"-url" {
				t.Errorf("%s: ZOEA_NATS_URL must come from Secret zoea-nats key %s-url, got %+v", name, name, e)
			}
		}
		for cmName, cm := range m.configMaps {
			for k, v := range cm.Data {
				if strings.HasPrefix(v, "nats://") || strings.HasPrefix(v, "tls://") {
					t.Errorf("ConfigMap %s %s=%q: NATS URLs carry credentials and live in Secret zoea-nats", cmName, k, v)
				}
			}
		}
		if m.overlay != "overlays/dev" {
			// The Helm values run the clustered JetStream the prod URLs (nats://bus:…@<this>:4222) point at.
			natsHelmService(t)
			if len(m.secrets) != 0 {
				t.Errorf("%s generates Secrets %v: NATS credentials must be supplied from outside", m.overlay, keys(m.secrets))
			}
			return
		}
		var secret *corev1.Secret
		for n, s := range m.secrets {
			if strings.HasPrefix(n, "zoea-nats") {
				secret = s
			}
		}
		if secret == nil {
			t.Fatal("dev overlay does not generate Secret zoea-nats")
		}
		nats := m.statefulSets["nats"]
		if nats == nil {
			t.Fatal("dev overlay has no NATS")
		}
		c := nats.Spec.Template.Spec.Containers[0]
		if i := slices.Index(c.Args, "--config"); i < 0 || i+1 >= len(c.Args) || c.Args[i+1] != "/etc/nats/nats.conf" {
			t.Errorf("dev NATS args %v do not load /etc/nats/nats.conf", c.Args)
		}
		var cfgMap string
		for _, v := range nats.Spec.Template.Spec.Volumes {
			if v.ConfigMap != nil && slices.ContainsFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.Name == v.Name && vm.MountPath == "/etc/nats" }) {
				cfgMap = v.ConfigMap.Name
			}
		}
		want, err := os.ReadFile(filepath.Join(repoRoot(t), natsConf))
		if err != nil {
			t.Fatal(err)
		}
		if cm := m.configMaps[cfgMap]; cm == nil || cm.Data["nats.conf"] != string(want) {
			t.Errorf("dev NATS does not mount %s at /etc/nats (ConfigMap %q)", natsConf, cfgMap)
		}
		provURLs := map[string]string{"provision-bus": "provision-bus-url", "provision-runner": "provision-runner-url"}
		for _, user := range allNATSUsers {
			pwVar := natsPasswordVar(user)
			e := containerEnvVar(c, pwVar)
			if e == nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != secret.Name || e.ValueFrom.SecretKeyRef.Key != pwVar {
				t.Errorf("dev NATS: %s must come from Secret %s, got %+v", pwVar, secret.Name, e)
			}
			key := user + "-url"
			if k, ok := provURLs[user]; ok {
				key = k
			}
			u, err := url.Parse(secretValue(secret, key))
			if err != nil {
				t.Errorf("zoea-nats %s: %v", key, err)
				continue
			}
			pw, _ := u.User.Password()
			if u.User.Username() != user || pw == "" || pw != secretValue(secret, pwVar) {
				t.Errorf("zoea-nats %s has user %q password %q, want user %s with %s", key, u.User.Username(), pw, user, pwVar)
			}
			checkServicePort(t, m, key, u.Hostname(), u.Port())
		}
	})
}
