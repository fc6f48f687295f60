// Package telemetry configures OpenTelemetry for a Zoea process: OTLP trace and metric exporters when
// OTEL_EXPORTER_OTLP_ENDPOINT (or a signal-specific endpoint) is set, no-op providers otherwise, and W3C trace
// context propagation always, so traces cross gRPC and NATS hops.
package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
)

// Enabled reports whether the standard OTEL environment asks for export.
func Enabled() bool {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		if os.Getenv(k) != "" {
			return os.Getenv("OTEL_SDK_DISABLED") != "true"
		}
	}
	return false
}

// flushTimeout bounds the final export, so an unreachable collector cannot hold up a shutdown.
const flushTimeout = 5 * time.Second

// Setup installs global providers for service and returns stop, which flushes them within flushTimeout (even after
// ctx is cancelled) and logs a failed flush. Call it deferred from main.
func Setup(ctx context.Context, service, version string, log *slog.Logger) (stop func(), err error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if !Enabled() {
		return func() {}, nil
	}
	// Schemaless: our two attributes must not pin a semconv schema that conflicts with the SDK's default resource.
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName(service), semconv.ServiceVersion(version)))
	if err != nil {
		return nil, err
	}
	traceExp, err := otlptracegrpc.New(ctx)
	if err != nil {
		return nil, err
	}
	metricExp, err := otlpmetricgrpc.New(ctx)
	if err != nil {
		return nil, errors.Join(err, traceExp.Shutdown(ctx))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(traceExp), sdktrace.WithResource(res))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metricExp)), sdkmetric.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		if err := errors.Join(tp.Shutdown(sctx), mp.Shutdown(sctx)); err != nil {
			log.Warn("telemetry flush failed", "err", err)
		}
	}, nil
}
