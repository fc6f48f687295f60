package natstest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/testsupport/testdep"
)

// SystemBinary is where Debian's nats-server package installs the server that CI and `zoea dev` use.
const SystemBinary = "/usr/sbin/nats-server"

// StartSystem runs the machine's own nats-server binary (often older than Version, which the other Start
// functions run: Debian 12 ships 2.9) with JetStream on a free loopback port and returns its URL. It proves Zoea
// works with the server users actually run, not only with the newest one. A missing binary is testdep.Missing:
// skipped locally, a failure in CI.
func StartSystem(tb testing.TB) string {
	tb.Helper()
	bin := os.Getenv("ZOEA_TEST_NATS_SERVER")
	if bin == "" {
		bin = SystemBinary
	}
	if _, err := os.Stat(bin); err != nil {
		testdep.Missing(tb, "natstest: no system nats-server at %s (apt-get install nats-server)", bin)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := tb.TempDir()
	cmd := exec.Command(bin, "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-js", "-sd", filepath.Join(dir, "js"))
	if err := cmd.Start(); err != nil {
		tb.Fatalf("natstest: start %s: %v", bin, err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return "nats://" + addr
		}
		if time.Now().After(deadline) {
			tb.Fatalf("natstest: %s did not listen on %s", bin, addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
