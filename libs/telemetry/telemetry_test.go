package telemetry_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/zoeaswarm/zoea/libs/telemetry"
)

func TestDisabledIsANoOpButPropagates(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	stop, err := telemetry.Setup(context.Background(), "test", "dev", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if fields := otel.GetTextMapPropagator().Fields(); len(fields) == 0 {
		t.Fatal("no trace-context propagator installed: traces would not cross gRPC and NATS hops")
	}
}

// An unreachable collector must not hold up a shutdown, even when the run context is already cancelled.
func TestStopIsBoundedWithAnUnreachableCollector(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	ctx, cancel := context.WithCancel(context.Background())
	stop, err := telemetry.Setup(ctx, "test", "dev", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	_, span := otel.Tracer("test").Start(ctx, "work")
	span.End()
	cancel()
	began := time.Now()
	stop()
	if d := time.Since(began); d > 7*time.Second {
		t.Fatalf("stop took %v", d)
	}
}
