package app_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	"github.com/zoeaswarm/zoea/libs/config"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/libs/swarmbus"
	"github.com/zoeaswarm/zoea/services/bus/internal/app"
)

func testLogger() *slog.Logger {
	if os.Getenv("ZOEA_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// busProc is one bus "process": app.Run on a loopback listener, stoppable and replaceable.
type busProc struct {
	addr   string
	conn   *grpc.ClientConn
	client busv1.BusServiceClient
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

type busSetup struct {
	natsURL, memAddr string
	token            string
	allowMysis       bool
	noDelivery       bool
	waitReady        bool
}

func startBus(t testing.TB, s busSetup) *busProc {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := app.Config{
		Server:              server.Config{ListenAddr: lis.Addr().String(), AdminToken: config.Secret(s.token), ShutdownTimeout: 5 * time.Second},
		NATSURL:             s.natsURL,
		MemoryAddr:          s.memAddr,
		AllowMysisBroadcast: s.allowMysis,
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &busProc{addr: lis.Addr().String(), cancel: cancel, done: make(chan error, 1)}
	go func() {
		p.done <- app.Run(ctx, cfg, app.Options{
			Logger: testLogger(), Listener: lis, CheckInterval: 50 * time.Millisecond, NoDelivery: s.noDelivery, PublishBudget: 2 * time.Second,
			Consumer: swarmbus.ConsumerOptions{RetryBase: 20 * time.Millisecond, RetryMax: 200 * time.Millisecond, FetchWait: 300 * time.Millisecond},
		})
	}()
	p.conn, err = server.Dial(p.addr, s.token)
	if err != nil {
		t.Fatal(err)
	}
	p.client = busv1.NewBusServiceClient(p.conn)
	t.Cleanup(func() { p.stop(t) })
	if s.waitReady {
		p.waitHealth(t, healthpb.HealthCheckResponse_SERVING)
	}
	return p
}

// stop shuts the bus down as SIGTERM would and waits for it.
func (p *busProc) stop(t testing.TB) {
	p.once.Do(func() {
		p.cancel()
		select {
		case err := <-p.done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("bus exited with %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("bus did not stop")
		}
		p.conn.Close()
	})
}

// waitHealth follows the bus's health with a Watch stream (each change is pushed) until it reports want.
func (p *busProc) waitHealth(t testing.TB, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	w, err := healthpb.NewHealthClient(p.conn).Watch(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatalf("health watch: %v", err)
	}
	var last healthpb.HealthCheckResponse_ServingStatus
	for {
		resp, err := w.Recv()
		if err != nil {
			t.Fatalf("health never became %v (last %v): %v", want, last, err)
		}
		if last = resp.GetStatus(); last == want {
			return
		}
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// observer is a test's own connection to NATS, to see wakes and events as a runner or UI would.
func observer(t testing.TB, url string) *swarmbus.Bus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := swarmbus.Connect(ctx, url, swarmbus.Options{Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// wakeLog records wakes by mysis.
type wakeLog struct {
	mu      sync.Mutex
	wakes   map[string][]swarmbus.WakeReason
	changed chan struct{} // closed (and replaced) on every wake
}

func watchWakes(t testing.TB, b *swarmbus.Bus) *wakeLog {
	t.Helper()
	w := &wakeLog{wakes: map[string][]swarmbus.WakeReason{}, changed: make(chan struct{})}
	if _, err := b.SubscribeWakes(ctxT(t), func(_ context.Context, wk swarmbus.Wake) {
		w.mu.Lock()
		w.wakes[wk.MysisID] = append(w.wakes[wk.MysisID], wk.Reason)
		close(w.changed)
		w.changed = make(chan struct{})
		w.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	return w
}

// await returns once cond holds, re-checking it after every wake.
func (w *wakeLog) await(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	timeout := time.NewTimer(within)
	defer timeout.Stop()
	for {
		w.mu.Lock()
		changed := w.changed
		w.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-timeout.C:
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
	}
}

func (w *wakeLog) count(reason swarmbus.WakeReason) (myses int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, rs := range w.wakes {
		for _, r := range rs {
			if r == reason {
				myses++
				break
			}
		}
	}
	return myses
}

// eventually polls cond every 10ms until it holds or the deadline passes. It is only for state held by another
// process that pushes no change notifications (the real memory service's rows); in-process fakes use their Await.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
	}
}

// fieldOf returns the field named by an InvalidArgument status's BadRequest details.
func fieldOf(err error) string {
	st, _ := status.FromError(err)
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 {
			return br.GetFieldViolations()[0].GetField()
		}
	}
	return ""
}

func wantCode(t testing.TB, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("got %v, want %v", err, code)
	}
}
