package swarmbus_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/zoeaswarm/zoea/libs/swarmbus"
)

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
