package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
)

// Without Patroni and etcd the mode installs nothing and says exactly what to install.
func TestPatroniToolsSaysWhatToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := patroniTools()
	if err == nil {
		t.Fatal("no error with neither patroni nor etcd on PATH")
	}
	for _, want := range []string{"patroni", "etcd", "sudo apt-get install -y patroni etcd-server"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// The newest major version's binaries are used, whatever versions Debian installed.
func TestPgBinDirPicksTheNewestVersion(t *testing.T) {
	root := t.TempDir()
	if got := pgBinDir(root); got != "" {
		t.Errorf("empty root: got %q, want none", got)
	}
	for _, v := range []string{"9", "15", "16"} {
		bin := filepath.Join(root, v, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if v != "16" { // a version without the server (only the client package) does not count
			if err := os.WriteFile(filepath.Join(bin, "postgres"), nil, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got, want := pgBinDir(root), filepath.Join(root, "15", "bin"); got != want {
		t.Errorf("got %q, want %q (15 > 9 numerically; 16 has no server)", got, want)
	}
}

// The multi-host URL names every node and asks for the writable one.
func TestPatroniURL(t *testing.T) {
	c := &patroniCluster{nodes: []*pgNode{{pgPort: 5441}, {pgPort: 5442}, {pgPort: 5443}}}
	want := "postgres://postgres@127.0.0.1:5441,127.0.0.1:5442,127.0.0.1:5443/postgres?sslmode=disable&target_session_attrs=read-write"
	if got := c.url(); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// The play gap spans the last reply before the fault to the first after it; tool results do not count.
func TestPlayGap(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)
	at := func(role memoryv1.Role, s float64) *memoryv1.Memory {
		return &memoryv1.Memory{Role: role, CreatedAt: timestamppb.New(t0.Add(time.Duration(s * float64(time.Second))))}
	}
	a, tool := memoryv1.Role_ROLE_ASSISTANT, memoryv1.Role_ROLE_TOOL
	histories := map[string][]*memoryv1.Memory{
		"fast": {at(a, 1), at(a, 9), at(tool, 10.5), at(a, 12), at(a, 30)},
		"slow": {at(a, 2), at(a, 8), at(tool, 11), at(a, 25), at(a, 40)},
		"none": {at(a, 3)}, // no reply after the fault: progressAfter reports it, the gap does not count it
	}
	gap, who := playGap(histories, t0.Add(10*time.Second), t0.Add(time.Minute))
	if gap != 17*time.Second || who != "slow" {
		t.Errorf("got %s (%s), want 17s (slow)", gap, who)
	}
}
