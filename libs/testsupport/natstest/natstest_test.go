package natstest_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/zoeaswarm/zoea/libs/testsupport/natstest"
)

func TestJetStreamSurvivesRestartOnSameDir(t *testing.T) {
	dir := t.TempDir()
	srv := natstest.StartDir(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "t.x", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	srv.Shutdown()

	srv2 := natstest.StartDir(t, dir)
	nc2, err := nats.Connect(srv2.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	js2, _ := jetstream.New(nc2)
	s, err := js2.Stream(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := s.GetMsg(ctx, 1)
	if err != nil || string(msg.Data) != "hello" {
		t.Fatalf("message lost across restart: %v %+v", err, msg)
	}
}

// Shutdown and Kill end the process: the port no longer answers, and a second stop does nothing.
func TestShutdownAndKillStopTheServer(t *testing.T) {
	for _, stop := range []struct {
		name string
		do   func(*natstest.Server)
	}{{"shutdown", (*natstest.Server).Shutdown}, {"kill", (*natstest.Server).Kill}} {
		t.Run(stop.name, func(t *testing.T) {
			srv := natstest.Start(t)
			nc, err := nats.Connect(srv.ClientURL())
			if err != nil {
				t.Fatal(err)
			}
			nc.Close()
			stop.do(srv)
			stop.do(srv)
			if c, err := net.DialTimeout("tcp", strings.TrimPrefix(srv.ClientURL(), "nats://"), time.Second); err == nil {
				c.Close()
				t.Fatalf("%s: %s still accepts connections", stop.name, srv.ClientURL())
			}
		})
	}
}

// A server with Users admits only them, with their permissions, and Log hears the violations it logs.
func TestUsersAndLog(t *testing.T) {
	violations := make(chan string, 16)
	srv := natstest.StartWith(t, natstest.Options{
		Users: []natstest.User{{Name: "u", Password: "p", PublishAllow: []string{"ok.>", "_INBOX.>"}, SubscribeAllow: []string{"ok.>", "_INBOX.>"}}},
		Log: func(line string) {
			if strings.Contains(line, "Violation") {
				violations <- line
			}
		},
	})
	if nc, err := nats.Connect(srv.ClientURL()); err == nil {
		nc.Close()
		t.Fatal("an anonymous client was admitted")
	}
	url := strings.Replace(srv.ClientURL(), "nats://", "nats://u:p@", 1)
	nc, err := nats.Connect(url, nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatalf("user u: %v", err)
	}
	defer nc.Close()
	if err := nc.Publish("ok.1", nil); err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish("forbidden", nil); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case line := <-violations:
		if !strings.Contains(line, "forbidden") {
			t.Fatalf("violation logged for another subject: %s", line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server logged no violation for a forbidden publish (or Log did not hear it)")
	}
	select {
	case line := <-violations:
		t.Fatalf("an allowed publish was logged as a violation: %s", line)
	default:
	}
}

// A server without JetStream answers core NATS and no JetStream requests.
func TestStartWithoutJetStream(t *testing.T) {
	srv := natstest.StartWithoutJetStream(t)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Request("$JS.API.INFO", nil, 2*time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("$JS.API.INFO on a server without JetStream: %v, want no responders", err)
	}
}

// What a test pays per server: a JetStream nats-server process started, ready (/healthz 200) and stopped.
func BenchmarkStartShutdown(b *testing.B) {
	bin := natstest.Binary(b)
	b.Logf("nats-server %s at %s", natstest.Version, bin)
	for b.Loop() {
		natstest.Start(b).Shutdown()
	}
}

// A shipped config file runs unchanged: its accounts and users (passwords from Env) are the only way in, its
// jetstream block is kept (JetStream itself comes from the command line), and a cluster runs it on every node.
func TestConfigFileAndEnv(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "shipped.conf")
	if err := os.WriteFile(conf, []byte("jetstream {\n  sync_interval: always\n}\naccounts {\n  A: { jetstream: enabled, users: [ {user: a, password: $NATSTEST_A_PASSWORD} ] }\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := natstest.Options{ConfigFile: conf, Env: []string{"NATSTEST_A_PASSWORD=secret-a"}}
	check := func(t *testing.T, url string) {
		t.Helper()
		if nc, err := nats.Connect(url); err == nil {
			nc.Close()
			t.Fatal("an anonymous client was admitted")
		}
		nc, err := nats.Connect(strings.ReplaceAll(url, "nats://", "nats://a:secret-a@"))
		if err != nil {
			t.Fatalf("user a with the password from Env: %v", err)
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
			t.Fatalf("JetStream in account A: %v", err)
		}
	}
	t.Run("server", func(t *testing.T) {
		srv := natstest.StartWith(t, opts)
		check(t, srv.ClientURL())
	})
	t.Run("cluster", func(t *testing.T) {
		c := natstest.StartClusterWith(t, 3, opts)
		check(t, c.Servers[0].ClientURL())
	})
}
