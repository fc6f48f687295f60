package main

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/zoeaswarm/zoea/libs/swarmbus"
)

// The NATS config the compose file and the dev k8s overlay mount (deploy/nats/nats.conf) gives every service exactly
// the permissions in swarmbus.Permissions — parsed by nats-server's own config loader, so the file cannot drift
// from the code in either direction (a missing user, an extra subject, a dropped deny). It lives here because
// cmd/zoea is the module that links nats-server anyway (zoea dev's embedded fallback); the services and libs do not
// (deploy TestToolingStaysOutOfTheServices), and libs/swarmbus's TestDeployNATSHelmValues checks the Helm values.
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
		sameNATSSet(t, name+" publish allow", u.Permissions.Publish.Allow, want.PublishAllow)
		sameNATSSet(t, name+" publish deny", u.Permissions.Publish.Deny, want.PublishDeny)
		sameNATSSet(t, name+" subscribe allow", u.Permissions.Subscribe.Allow, want.SubscribeAllow)
		sameNATSSet(t, name+" subscribe deny", u.Permissions.Subscribe.Deny, nil)
	}
}

// sameNATSSet fails the test unless the deploy file's subjects are exactly the code's, in any order.
func sameNATSSet(t *testing.T, what string, got, want []string) {
	t.Helper()
	g, w := slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	if !slices.Equal(g, w) {
		t.Errorf("%s: deploy file has %q, swarmbus.Permissions has %q", what, g, w)
	}
}
