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

// The production NATS (the official Helm chart, deploy/k8s/external/nats-values.yaml) gets the same accounts and
// users through config.merge (swarmbus.Accounts, swarmbus.Permissions), each password an unquoted
// `<< $ZOEA_NATS_<USER>_PASSWORD >>` the server reads from its environment.
func TestDeployNATSHelmValues(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "k8s", "external", "nats-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type perm struct {
		Allow []string `yaml:"allow"`
		Deny  []string `yaml:"deny"`
	}
	type user struct {
		User        string `yaml:"user"`
		Password    string `yaml:"password"`
		Permissions struct {
			Publish   perm `yaml:"publish"`
			Subscribe perm `yaml:"subscribe"`
		} `yaml:"permissions"`
	}
	type account struct {
		JetStream string `yaml:"jetstream"`
		Users     []user `yaml:"users"`
		Exports   []struct {
			Stream   string   `yaml:"stream"`
			Accounts []string `yaml:"accounts"`
		} `yaml:"exports"`
		Imports []struct {
			Stream struct {
				Account string `yaml:"account"`
				Subject string `yaml:"subject"`
			} `yaml:"stream"`
		} `yaml:"imports"`
	}
	var values struct {
		Config struct {
			Merge struct {
				Authorization any                `yaml:"authorization"`
				Accounts      map[string]account `yaml:"accounts"`
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
	merge := values.Config.Merge
	if merge.Authorization != nil {
		t.Error("nats-values.yaml has a top-level authorization block: Zoea's users live in swarmbus.Accounts' accounts")
	}
	if len(merge.Accounts) != len(swarmbus.Accounts) {
		t.Errorf("nats-values.yaml has %d accounts, swarmbus.Accounts %d", len(merge.Accounts), len(swarmbus.Accounts))
	}
	seen := 0
	for _, wantAcc := range swarmbus.Accounts {
		acc, ok := merge.Accounts[wantAcc.Name]
		if !ok {
			t.Errorf("nats-values.yaml has no account %s", wantAcc.Name)
			continue
		}
		if acc.JetStream != "enabled" {
			t.Errorf("account %s: jetstream %q, want enabled", wantAcc.Name, acc.JetStream)
		}
		var exports, imports, wantExports, wantImports []string
		for _, e := range acc.Exports {
			exports = append(exports, e.Stream+" to "+strings.Join(e.Accounts, ","))
		}
		for _, i := range acc.Imports {
			imports = append(imports, i.Stream.Subject+" from "+i.Stream.Account)
		}
		for _, e := range wantAcc.Exports {
			for _, other := range swarmbus.Accounts {
				if other.Name != wantAcc.Name {
					wantExports = append(wantExports, e+" to "+other.Name)
				}
			}
		}
		for _, i := range wantAcc.Imports {
			wantImports = append(wantImports, i.Subject+" from "+i.Account)
		}
		sameSet(t, wantAcc.Name+" exports", exports, wantExports)
		sameSet(t, wantAcc.Name+" imports", imports, wantImports)
		var users []string
		for _, u := range acc.Users {
			users = append(users, u.User)
			seen++
			want, ok := swarmbus.Permissions[u.User]
			if !ok {
				t.Errorf("nats-values.yaml has user %q, which no Zoea role is", u.User)
				continue
			}
			pwVar := "ZOEA_NATS_" + strings.ToUpper(strings.ReplaceAll(u.User, "-", "_")) + "_PASSWORD"
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
		sameSet(t, wantAcc.Name+" users", users, wantAcc.Roles)
	}
	if seen != len(swarmbus.Permissions) {
		t.Errorf("nats-values.yaml has %d users, swarmbus.Permissions %d roles", seen, len(swarmbus.Permissions))
	}
}
