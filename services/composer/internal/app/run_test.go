package app

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/testsupport/memfake"
)

// Run, as production wires it, on a loopback listener the test holds: health follows the memory service, and a
// composition reads the mysis from it.
func TestRunServesOnALoopbackListener(t *testing.T) {
	mem := memfake.Start(t)
	id := mem.AddMyses("run", 1)[0]
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.MemoryAddr = mem.Addr()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Listener: lis})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run after cancel: %v", err)
		}
	}()
	conn, err := server.Dial(lis.Addr().String(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second) // bounds a broken run only
	defer wcancel()
	if err := server.AwaitServing(wctx, conn, composerv1.ComposerService_ServiceDesc.ServiceName); err != nil {
		t.Fatalf("composer: %v", err)
	}
	resp, err := composerv1.NewComposerServiceClient(conn).ComposeContext(ctx, &composerv1.ComposeContextRequest{MysisId: id})
	if err != nil {
		t.Fatalf("ComposeContext: %v", err)
	}
	if len(resp.GetMessages()) == 0 || resp.GetMessages()[0].GetContent() != "You play SpaceMolt." {
		t.Fatalf("the composition does not start with the mysis's system prompt: %v", resp.GetMessages())
	}
	if err := Main(ctx, []string{"frobnicate"}, "test"); err == nil {
		t.Fatal("unknown subcommand accepted")
	}
}
