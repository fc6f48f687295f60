package svcbin_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/testsupport/svcbin"
)

func TestRepoRootHoldsTheRootModule(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(svcbin.RepoRoot(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "module github.com/zoeaswarm/zoea\n") {
		t.Fatalf("RepoRoot's go.mod is not the root module's: %.60q", b)
	}
}

// The simulator is the quickest service to build; a second Build is the first one's binary.
func TestBuildOncePerProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary (skipped with -short only)")
	}
	first := svcbin.Build(t, "spacemolt-sim")
	if second := svcbin.Build(t, "spacemolt-sim"); second != first {
		t.Fatalf("built twice: %s, %s", first, second)
	}
	if err := exec.Command(first, "frobnicate").Run(); err == nil {
		t.Fatal("the built simulator accepted an unknown subcommand")
	}
}

func TestPrebuiltBinaryDirectory(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "bus")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ZOEA_TEST_BIN_DIR", dir)
	if got := svcbin.Build(t, "bus"); got != p {
		t.Fatalf("Build = %s, want the prebuilt %s", got, p)
	}
}

func TestLoggedAddr(t *testing.T) {
	logs := `not json
{"time":"t","level":"INFO","msg":"memory starting","ZOEA_LISTEN_ADDR":"127.0.0.1:0"}
{"time":"t","level":"INFO","msg":"grpc server listening","addr":"127.0.0.1:43117"}
{"time":"t","level":"INFO","msg":"http server listening","addr":"127.0.0.1:40001"}
`
	if got := svcbin.LoggedAddr(logs, "grpc server listening"); got != "127.0.0.1:43117" {
		t.Errorf("grpc: %q", got)
	}
	if got := svcbin.LoggedAddr(logs, "http server listening"); got != "127.0.0.1:40001" {
		t.Errorf("http: %q", got)
	}
	if got := svcbin.LoggedAddr(`{"msg":"grpc server listening"}`, "grpc server listening"); got != "" {
		t.Errorf("a line without addr: %q", got)
	}
}
