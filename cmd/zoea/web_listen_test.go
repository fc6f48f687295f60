package main

import (
	"context"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// `zoea web` beside a running `make dev` finds its port taken by the swarm's own console: it says so and where to
// open it, instead of "bind: address already in use".
func TestWebSaysWhatHoldsItsAddress(t *testing.T) {
	ctx := context.Background()
	console, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			_, _ = w.Write([]byte("ok\n"))
			return
		}
		http.NotFound(w, r)
	})}
	go func() { _ = srv.Serve(console) }()
	t.Cleanup(func() { _ = srv.Close() })
	addr := console.Addr().String()

	t.Run("the running swarm's console", func(t *testing.T) {
		dir := t.TempDir()
		launcher := exec.Command("sleep", "600") // alive, and not this process
		if err := launcher.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = launcher.Process.Kill(); _ = launcher.Wait() })
		pid := launcher.Process.Pid
		pf := &pidFile{path: filepath.Join(dir, pidFileName), Launcher: procRecord{Name: "zoea dev", PID: pid, Started: startTime(pid), Addr: addr}}
		if err := pf.write(); err != nil {
			t.Fatal(err)
		}
		_, err := listenWeb(ctx, addr, dir)
		want := "the web console of the running swarm ('zoea dev', pid " + strconv.Itoa(pid) + ") already listens on " + addr +
			": open http://" + addr + "/ and log in with the token"
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "or --listen another address") {
			t.Fatalf("got %v, want %q…", err, want)
		}
	})
	t.Run("another console", func(t *testing.T) {
		_, err := listenWeb(ctx, addr, t.TempDir())
		if want := "a web console already listens on " + addr + ": open http://" + addr + "/; or --listen another address"; err == nil || err.Error() != want {
			t.Fatalf("got %v, want %q", err, want)
		}
	})
	t.Run("another program", func(t *testing.T) {
		other, err := net.Listen("tcp", "127.0.0.1:0") // hangs up on every connection: no HTTP there
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		go func() {
			for {
				c, err := other.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		_, err = listenWeb(ctx, other.Addr().String(), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "another program listens there") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("free", func(t *testing.T) {
		ln, err := listenWeb(ctx, "127.0.0.1:0", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		ln.Close()
	})
}
