package swarmbus_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/zoeaswarm/zoea/libs/natstest"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
)

// authServer starts NATS with one user per Zoea service, each with swarmbus.Permissions.
func authServer(t *testing.T) (host string) {
	t.Helper()
	return authServerFor(t, swarmbus.Permissions)
}

// authServerFor starts NATS with one user per entry of perms.
func authServerFor(t *testing.T, perms map[string]swarmbus.SubjectPermissions) (host string) {
	t.Helper()
	var users []*server.User
	for name, p := range perms {
		users = append(users, &server.User{Username: name, Password: name + "-secret", Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: p.PublishAllow, Deny: p.PublishDeny},
			Subscribe: &server.SubjectPermission{Allow: p.SubscribeAllow},
		}})
	}
	srv := natstest.StartAuth(t, users)
	return strings.TrimPrefix(srv.ClientURL(), "nats://")
}

func connectAs(ctx context.Context, host, user string, opts swarmbus.Options) (*swarmbus.Bus, error) {
	url := "nats://" + host
	if user != "" {
		url = fmt.Sprintf("nats://%s:%s-secret@%s", user, user, host)
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	return swarmbus.Connect(ctx, url, opts)
}

// Against a server with an authorization config: no credentials are refused with a sentence saying what to set;
// the bus's and a runner's credentials work with their least permissions; a runner cannot publish broadcasts or
// direct messages (the bus's subjects), the bus can.
func TestNATSAuthorization(t *testing.T) {
	host := authServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	short, scancel := context.WithTimeout(ctx, 5*time.Second)
	_, err := connectAs(short, host, "", swarmbus.Options{Name: "anonymous"})
	scancel()
	if err == nil || !strings.Contains(err.Error(), "ZOEA_NATS_CREDS") {
		t.Fatalf("anonymous connect: %v, want a refusal naming the settings", err)
	}

	bus, err := connectAs(ctx, host, "bus", swarmbus.Options{Name: "bus"})
	if err != nil {
		t.Fatalf("bus credentials: %v", err)
	}
	defer bus.Close()
	runner, err := connectAs(ctx, host, "runner", swarmbus.Options{Name: "runner", LeaseTTL: 3 * time.Second})
	if err != nil {
		t.Fatalf("runner credentials: %v", err)
	}
	defer runner.Close()
	if err := runner.Ready(ctx); err != nil {
		t.Fatalf("runner not ready: %v", err)
	}

	// The runner's own work: wakes and leases.
	if err := runner.PublishWake(ctx, "m1", swarmbus.WakeStart); err != nil {
		t.Errorf("runner wake: %v", err)
	}
	leases, err := runner.Leases("r1")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := leases.Acquire(ctx, "m1"); err != nil || !ok {
		t.Errorf("runner lease: %v %v", ok, err)
	}

	// The bus's subjects: refused to the runner (nothing is stored), open to the bus.
	pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = runner.PublishBroadcast(pctx, swarmbus.Broadcast{ID: "forged", Content: "sell everything"})
	pcancel()
	if err == nil {
		t.Fatal("a runner published a broadcast")
	}
	pctx, pcancel = context.WithTimeout(ctx, 2*time.Second)
	_, err = runner.PublishDirect(pctx, swarmbus.Direct{ID: "forged", MysisID: "m1", Content: "jump"})
	pcancel()
	if err == nil {
		t.Fatal("a runner published a direct message")
	}
	if _, err := bus.PublishBroadcast(ctx, swarmbus.Broadcast{ID: "real", Content: "mine iron"}); err != nil {
		t.Fatalf("bus broadcast: %v", err)
	}
}

// A named swarm's services work with swarmbus.PermissionsFor(name), and those permissions keep them off the default
// swarm's subjects and buckets.
func TestNATSAuthorizationOfANamedSwarm(t *testing.T) {
	perms, err := swarmbus.PermissionsFor("alpha")
	if err != nil {
		t.Fatal(err)
	}
	host := authServerFor(t, perms)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bus, err := connectAs(ctx, host, "bus", swarmbus.Options{Name: "bus", Swarm: "alpha"})
	if err != nil {
		t.Fatalf("bus credentials in swarm alpha: %v", err)
	}
	defer bus.Close()
	runner, err := connectAs(ctx, host, "runner", swarmbus.Options{Name: "runner", Swarm: "alpha"})
	if err != nil {
		t.Fatalf("runner credentials in swarm alpha: %v", err)
	}
	defer runner.Close()
	if _, err := bus.PublishBroadcast(ctx, swarmbus.Broadcast{ID: "b1", Content: "mine iron"}); err != nil {
		t.Fatalf("bus broadcast in swarm alpha: %v", err)
	}
	if err := runner.PublishWake(ctx, "m1", swarmbus.WakeStart); err != nil {
		t.Errorf("runner wake in swarm alpha: %v", err)
	}
	leases, err := runner.Leases("r1")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := leases.Acquire(ctx, "m1"); err != nil || !ok {
		t.Errorf("runner lease in swarm alpha: %v %v", ok, err)
	}
	if err := runner.Statuses().Put(ctx, swarmbus.Status{MysisID: "m1", State: "running"}); err != nil {
		t.Errorf("runner status in swarm alpha: %v", err)
	}

	// The same credentials in the default swarm: the JetStream API lets Connect ensure the default stream and
	// buckets, but publishing on the default swarm's subjects and writing its buckets is refused.
	other, err := connectAs(ctx, host, "bus", swarmbus.Options{Name: "bus-default"})
	if err != nil {
		t.Fatalf("connect to the default swarm: %v", err)
	}
	defer other.Close()
	pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = other.PublishBroadcast(pctx, swarmbus.Broadcast{ID: "b2", Content: "x"})
	pcancel()
	if err == nil {
		t.Error("swarm alpha's bus user published a broadcast of the default swarm")
	}
	pctx, pcancel = context.WithTimeout(ctx, 2*time.Second)
	err = other.Statuses().Put(pctx, swarmbus.Status{MysisID: "m1", State: "running"})
	pcancel()
	if err == nil {
		t.Error("swarm alpha's bus user wrote a status of the default swarm")
	}
}
