package swarmbus_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"go.yaml.in/yaml/v3"

	"github.com/zoeaswarm/zoea/libs/swarmbus"
)

// The NATS config the compose file and the dev k8s overlay mount (deploy/nats/nats.conf) gives every service exactly
// the permissions in swarmbus.Permissions — parsed by nats-server's own config loader, so the file cannot drift
// from the code in either direction (a missing user, an extra subject, a dropped deny).
func TestDeployNATSConfig(t *testing.T) {
	t.Setenv("ZOEA_NATS_BUS_PASSWORD", "bus-pass")
	t.Setenv("ZOEA_NATS_RUNNER_PASSWORD", "runner-pass")
	opts, err := server.ProcessConfigFile(filepath.Join("..", "..", "deploy", "nats", "nats.conf"))
	if err != nil {
		t.Fatalf("deploy/nats/nats.conf: %v", err)
	}
	if opts.NoAuthUser != "" || opts.Authorization != "" || opts.Username != "" {
		t.Fatalf("nats.conf must not allow unauthenticated or shared-token access: no_auth_user=%q token=%t user=%q",
			opts.NoAuthUser, opts.Authorization != "", opts.Username)
	}
	// Every acknowledged write is on disk (deploy/nats_test.go TestNATSSyncAlways checks the Helm values alike).
	if !opts.SyncAlways {
		t.Errorf("nats.conf: JetStream must fsync before acknowledging (jetstream { sync_interval: always }); SyncAlways=%t SyncInterval=%s",
			opts.SyncAlways, opts.SyncInterval)
	}
	got := map[string]*server.User{}
	for _, u := range opts.Users {
		got[u.Username] = u
	}
	if len(got) != len(swarmbus.Permissions) {
		t.Errorf("nats.conf has users %v, swarmbus.Permissions has %d services", slices.Sorted(maps.Keys(got)), len(swarmbus.Permissions))
	}
	for name, want := range swarmbus.Permissions {
		u, ok := got[name]
		if !ok {
			t.Errorf("nats.conf has no user %q", name)
			continue
		}
		if u.Password != name+"-pass" {
			t.Errorf("user %q password comes from %q, want $ZOEA_NATS_%s_PASSWORD", name, u.Password, strings.ToUpper(name))
		}
		if u.Permissions == nil || u.Permissions.Publish == nil || u.Permissions.Subscribe == nil {
			t.Errorf("user %q: publish and subscribe permissions must both be set: %+v", name, u.Permissions)
			continue
		}
		sameSet(t, name+" publish allow", u.Permissions.Publish.Allow, want.PublishAllow)
		sameSet(t, name+" publish deny", u.Permissions.Publish.Deny, want.PublishDeny)
		sameSet(t, name+" subscribe allow", u.Permissions.Subscribe.Allow, want.SubscribeAllow)
		sameSet(t, name+" subscribe deny", u.Permissions.Subscribe.Deny, nil)
	}
}

func sameSet(t *testing.T, what string, got, want []string) {
	t.Helper()
	g, w := slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	if !slices.Equal(g, w) {
		t.Errorf("%s: deploy file has %q, swarmbus.Permissions has %q", what, g, w)
	}
}

// The production NATS (the official Helm chart, deploy/k8s/external/nats-values.yaml) gets the same users through
// config.merge, each password an unquoted `<< $ZOEA_NATS_<USER>_PASSWORD >>` the server reads from its environment.
func TestDeployNATSHelmValues(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "k8s", "external", "nats-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type perm struct {
		Allow []string `yaml:"allow"`
		Deny  []string `yaml:"deny"`
	}
	var values struct {
		Config struct {
			Merge struct {
				Authorization struct {
					Users []struct {
						User        string `yaml:"user"`
						Password    string `yaml:"password"`
						Permissions struct {
							Publish   perm `yaml:"publish"`
							Subscribe perm `yaml:"subscribe"`
						} `yaml:"permissions"`
					} `yaml:"users"`
				} `yaml:"authorization"`
			} `yaml:"merge"`
		} `yaml:"config"`
		Container struct {
			Env map[string]struct {
				ValueFrom struct {
					SecretKeyRef struct {
						Name, Key string
					} `yaml:"secretKeyRef"`
				} `yaml:"valueFrom"`
			} `yaml:"env"`
		} `yaml:"container"`
	}
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatalf("nats-values.yaml: %v", err)
	}
	users := values.Config.Merge.Authorization.Users
	if len(users) != len(swarmbus.Permissions) {
		t.Errorf("nats-values.yaml has %d users, swarmbus.Permissions %d services", len(users), len(swarmbus.Permissions))
	}
	for _, u := range users {
		want, ok := swarmbus.Permissions[u.User]
		if !ok {
			t.Errorf("nats-values.yaml has user %q, which no Zoea service is", u.User)
			continue
		}
		pwVar := "ZOEA_NATS_" + strings.ToUpper(u.User) + "_PASSWORD"
		if u.Password != "<< $"+pwVar+" >>" {
			t.Errorf("user %s password %q, want << $%s >> (from the server's environment)", u.User, u.Password, pwVar)
		}
		if ref := values.Container.Env[pwVar].ValueFrom.SecretKeyRef; ref.Name == "" || ref.Key != pwVar {
			t.Errorf("container.env %s must come from a Secret key %s, got %+v", pwVar, pwVar, ref)
		}
		sameSet(t, u.User+" publish allow", u.Permissions.Publish.Allow, want.PublishAllow)
		sameSet(t, u.User+" publish deny", u.Permissions.Publish.Deny, want.PublishDeny)
		sameSet(t, u.User+" subscribe allow", u.Permissions.Subscribe.Allow, want.SubscribeAllow)
		sameSet(t, u.User+" subscribe deny", u.Permissions.Subscribe.Deny, nil)
	}
}
