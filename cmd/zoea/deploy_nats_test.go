package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/conf"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/zoeaswarm/zoea/libs/swarmbus"
)

// natsPasswordVar is the server environment variable a user's password comes from: ZOEA_NATS_<USER>_PASSWORD, with
// the '-' of provision-bus and provision-runner as '_'.
func natsPasswordVar(user string) string {
	return "ZOEA_NATS_" + strings.ToUpper(strings.ReplaceAll(user, "-", "_")) + "_PASSWORD"
}

// The NATS config the compose file and the dev k8s overlay mount (deploy/nats/nats.conf) has exactly the accounts of
// swarmbus.Accounts, with their exports and imports, and in them exactly the users of swarmbus.Permissions with
// those permissions — parsed by nats-server's own config loader, so the file cannot drift from the code in either
// direction (a missing user, an extra subject, a user in the wrong account, a dropped deny). It lives here because
// cmd/zoea is the module that links nats-server anyway (zoea dev's embedded fallback); the services and libs do not
// (deploy TestToolingStaysOutOfTheServices), and libs/swarmbus's TestDeployNATSHelmValues checks the Helm values.
func TestDeployNATSConfig(t *testing.T) {
	for role := range swarmbus.Permissions {
		t.Setenv(natsPasswordVar(role), role+"-pass")
	}
	file := filepath.Join("..", "..", "deploy", "nats", "nats.conf")
	opts, err := server.ProcessConfigFile(file)
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
	accountOf := map[string]string{}
	for _, a := range swarmbus.Accounts {
		for _, r := range a.Roles {
			accountOf[r] = a.Name
		}
	}
	got := map[string]*server.User{}
	for _, u := range opts.Users {
		got[u.Username] = u
	}
	if len(got) != len(swarmbus.Permissions) {
		t.Errorf("nats.conf has users %v, swarmbus.Permissions has %d roles", slices.Sorted(maps.Keys(got)), len(swarmbus.Permissions))
	}
	for name, want := range swarmbus.Permissions {
		u, ok := got[name]
		if !ok {
			t.Errorf("nats.conf has no user %q", name)
			continue
		}
		if u.Password != name+"-pass" {
			t.Errorf("user %q password comes from %q, want $%s", name, u.Password, natsPasswordVar(name))
		}
		if u.Account == nil || u.Account.GetName() != accountOf[name] {
			t.Errorf("user %q is in account %v, want %s (swarmbus.Accounts)", name, u.Account, accountOf[name])
		}
		if u.Permissions == nil || u.Permissions.Publish == nil || u.Permissions.Subscribe == nil {
			t.Errorf("user %q: publish and subscribe permissions must both be set: %+v", name, u.Permissions)
			continue
		}
		sameNATSSet(t, name+" publish allow", u.Permissions.Publish.Allow, want.PublishAllow)
		sameNATSSet(t, name+" publish deny", u.Permissions.Publish.Deny, want.PublishDeny)
		sameNATSSet(t, name+" subscribe allow", u.Permissions.Subscribe.Allow, want.SubscribeAllow)
		sameNATSSet(t, name+" subscribe deny", u.Permissions.Subscribe.Deny, nil)
	}

	// Exports and imports, which the server's options keep unexported: from the parsed file itself.
	raw, err := conf.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	accounts, _ := raw["accounts"].(map[string]any)
	if len(accounts) != len(swarmbus.Accounts) {
		t.Errorf("nats.conf has accounts %v, swarmbus.Accounts %d", slices.Sorted(maps.Keys(accounts)), len(swarmbus.Accounts))
	}
	for _, want := range swarmbus.Accounts {
		a, _ := accounts[want.Name].(map[string]any)
		if a == nil {
			t.Errorf("nats.conf has no account %s", want.Name)
			continue
		}
		if js := fmt.Sprint(a["jetstream"]); js != "enabled" {
			t.Errorf("account %s: jetstream %s, want enabled", want.Name, js)
		}
		var exports, imports []string
		for _, e := range list(a["exports"]) {
			exports = append(exports, fmt.Sprintf("%v to %v", e["stream"], e["accounts"]))
		}
		for _, i := range list(a["imports"]) {
			s, _ := i["stream"].(map[string]any)
			imports = append(imports, fmt.Sprintf("%v from %v", s["subject"], s["account"]))
		}
		var wantExports, wantImports []string
		for _, e := range want.Exports {
			for _, other := range swarmbus.Accounts {
				if other.Name != want.Name {
					wantExports = append(wantExports, fmt.Sprintf("%s to [%s]", e, other.Name))
				}
			}
		}
		for _, i := range want.Imports {
			wantImports = append(wantImports, i.Subject+" from "+i.Account)
		}
		sameNATSSet(t, want.Name+" stream exports", exports, wantExports)
		sameNATSSet(t, want.Name+" stream imports", imports, wantImports)
	}
}

// list is a config list of maps.
func list(v any) []map[string]any {
	var out []map[string]any
	l, _ := v.([]any)
	for _, e := range l {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		} else {
			out = append(out, map[string]any{"unexpected": e})
		}
	}
	return out
}

// sameNATSSet fails the test unless the deploy file's subjects are exactly the code's, in any order.
func sameNATSSet(t *testing.T, what string, got, want []string) {
	t.Helper()
	g, w := slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	if !slices.Equal(g, w) {
		t.Errorf("%s: deploy file has %q, swarmbus.Permissions has %q", what, g, w)
	}
}
