package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
)

// runZoeaErr runs zoea with args and returns what it printed and its error.
func runZoeaErr(args ...string) (string, error) {
	var out strings.Builder
	root := newRoot("test")
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// On a NATS without accounts, `zoea nats provision --url` creates the four resources and says the services can
// start; run again, it leaves them alone.
func TestNATSProvisionWithoutAccounts(t *testing.T) {
	srv := natstest.Start(t)
	out := runZoea(t, "nats", "provision", "--url", srv.ClientURL(), "--lease-ttl", "4s")
	for _, want := range []string{"stream ZOEA_MESSAGES created (R1)", "consumer bus-delivery created", "bucket zoea_leases created (TTL 4s, R1)",
		"bucket zoea_status created (R1)", "NATS is provisioned for the default swarm (R1, lease TTL 4s): the bus and the runners can start."} {
		if !strings.Contains(out, want) {
			t.Errorf("first run printed\n%s\nwant %q", out, want)
		}
	}
	if again := runZoea(t, "nats", "provision", "--url", srv.ClientURL(), "--lease-ttl", "4s"); strings.Count(again, " unchanged ") != 4 {
		t.Errorf("second run printed\n%s\nwant four resources unchanged", again)
	}
}

// On the shipped config (deploy/nats/nats.conf: accounts, passwords from the environment) provisioning takes one
// user per account; afterwards the services' own users start, and the failures say what is wrong.
func TestNATSProvisionOnTheShippedConfig(t *testing.T) {
	var env []string
	for role := range swarmbus.Permissions {
		env = append(env, natsPasswordVar(role)+"="+role+"-pw")
	}
	srv := natstest.StartWith(t, natstest.Options{ConfigFile: filepath.Join("..", "..", "deploy", "nats", "nats.conf"), Env: env})
	host := strings.TrimPrefix(srv.ClientURL(), "nats://")
	as := func(user, pw string) string { return "nats://" + user + ":" + pw + "@" + host }

	// Before provisioning, a runner is refused at once with the command to run.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	if _, err := swarmbus.Connect(ctx, as("runner", "runner-pw"), swarmbus.Options{Role: swarmbus.RoleRunner, Logger: quiet}); err == nil ||
		!strings.Contains(err.Error(), "zoea nats provision") {
		t.Fatalf("runner before provisioning: %v, want a sentence naming zoea nats provision", err)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--bus-url", as("provision-bus", "provision-bus-pw")}, "give both --bus-url and --runner-url"},
		{[]string{"--bus-url", as("provision-bus", "wrong"), "--runner-url", as("provision-runner", "provision-runner-pw")}, "refused this service's credentials"},
		{[]string{"--bus-url", as("provision-runner", "provision-runner-pw"), "--runner-url", as("provision-runner", "provision-runner-pw")}, "PermissionsFor"},
		{[]string{"--url", as("provision-bus", "provision-bus-pw")}, "PermissionsFor"},
		{[]string{"--bus-url", as("provision-bus", "x"), "--runner-url", as("provision-runner", "x"), "--swarm", "Alpha"}, "invalid swarm name"},
	} {
		out, err := runZoeaErr(append([]string{"nats", "provision", "--wait", "20s"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("zoea nats provision %v: %v\n%s\nwant an error saying %q", c.args, err, out, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "-pw@") {
			t.Errorf("the error shows a password: %v", err)
		}
	}

	out := runZoea(t, "nats", "provision", "--bus-url", as("provision-bus", "provision-bus-pw"), "--runner-url", as("provision-runner", "provision-runner-pw"))
	if !strings.Contains(out, "stream ZOEA_MESSAGES created") || !strings.Contains(out, "bucket zoea_leases created") || !strings.Contains(out, "can start") {
		t.Fatalf("provisioning printed\n%s", out)
	}
	for _, role := range []string{swarmbus.RoleBus, swarmbus.RoleRunner} {
		b, err := swarmbus.Connect(ctx, as(role, role+"-pw"), swarmbus.Options{Role: role, Logger: quiet})
		if err != nil {
			t.Fatalf("%s after provisioning: %v", role, err)
		}
		b.Close()
	}
}
