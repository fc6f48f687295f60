package app_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/testsupport/pgtest"
	"github.com/zoeaswarm/zoea/libs/testsupport/svcbin"
)

// The real memory service is another module; the tests build its binary once (libs/testsupport/svcbin) and run it
// against a fresh Postgres database (libs/testsupport/pgtest), exactly as production runs it.
func TestMain(m *testing.M) {
	code := m.Run()
	svcbin.Clean()
	os.Exit(code)
}

func memoryBinary(tb testing.TB) string {
	tb.Helper()
	return svcbin.Build(tb, "memory")
}

// realMemory is a running memory service binary on a fresh database.
type realMemory struct {
	addr   string
	client memoryv1.MemoryServiceClient
	cmd    *exec.Cmd
}

func startRealMemory(tb testing.TB) *realMemory {
	tb.Helper()
	if testing.Short() {
		tb.Skip("needs Postgres and the memory binary")
	}
	bin := memoryBinary(tb)
	dbURL := pgtest.New(tb)
	cmd := exec.Command(bin, "serve")
	// The service picks its port and logs it (svcbin.LoggedAddr): a port picked here could be taken before it binds.
	cmd.Env = append(os.Environ(), "ZOEA_DATABASE_URL="+dbURL, "ZOEA_LISTEN_ADDR=127.0.0.1:0", "ZOEA_MIGRATE_ON_START=true",
		"ZOEA_ADMIN_TOKEN=", "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=")
	logs := &lineLog{grew: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = logs, logs
	if os.Getenv("ZOEA_TEST_LOG") != "" {
		cmd.Stderr = io.MultiWriter(logs, os.Stderr)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	// Stop the server before pgtest drops its database (cleanups run last-registered first).
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if tb.Failed() {
			tb.Logf("memory service output:\n%s", logs.String())
		}
	})
	addr := waitListening(tb, logs, exited)
	conn, err := server.Dial(addr, "")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	waitServing(tb, conn)
	return &realMemory{addr: addr, client: memoryv1.NewMemoryServiceClient(conn), cmd: cmd}
}

func waitServing(tb testing.TB, conn *grpc.ClientConn) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := server.AwaitServing(ctx, conn, ""); err != nil { // the health stream, not a poll
		tb.Fatalf("memory service never became SERVING: %v", err)
	}
}

// lineLog keeps a process's output and signals each write.
type lineLog struct {
	mu   sync.Mutex
	b    strings.Builder
	grew chan struct{}
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	close(l.grew)
	l.grew = make(chan struct{})
	return len(p), nil
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitListening returns the address the memory service logged once listening.
func waitListening(tb testing.TB, logs *lineLog, exited <-chan struct{}) string {
	tb.Helper()
	deadline := time.After(60 * time.Second)
	for {
		logs.mu.Lock()
		text, grew := logs.b.String(), logs.grew
		logs.mu.Unlock()
		if addr := svcbin.LoggedAddr(text, "grpc server listening"); addr != "" {
			return addr
		}
		select {
		case <-grew:
		case <-exited:
			tb.Fatalf("memory service exited before listening:\n%s", logs.String())
		case <-deadline:
			tb.Fatalf("memory service not listening after 60s:\n%s", logs.String())
		}
	}
}

// addMyses creates n myses through the API and returns their ids.
func (r *realMemory) addMyses(tb testing.TB, prefix string, n int) []string {
	tb.Helper()
	ids := make([]string, n)
	var wg sync.WaitGroup
	errc := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			resp, err := r.client.CreateMysis(context.Background(), &memoryv1.CreateMysisRequest{SystemPrompt: "You are a mysis.", Name: fmt.Sprintf("%s-%04d", prefix, i), Provider: "autopilot"})
			if err != nil {
				errc <- err
				return
			}
			ids[i] = resp.GetMysis().GetId()
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		tb.Fatal(err)
	}
	return ids
}

// broadcastRows counts, per mysis, the rows of a broadcast among its newest memories.
func (r *realMemory) broadcastRows(tb testing.TB, ids []string, broadcastID string) map[string]int {
	tb.Helper()
	out := map[string]int{}
	for _, id := range ids {
		resp, err := r.client.ListRecentMemories(context.Background(), &memoryv1.ListRecentMemoriesRequest{MysisId: id, Limit: 1000})
		if err != nil {
			tb.Fatal(err)
		}
		for _, m := range resp.GetMemories() {
			if m.GetBroadcastId() == broadcastID {
				out[id]++
			}
		}
	}
	return out
}
