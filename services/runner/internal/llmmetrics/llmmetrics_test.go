package llmmetrics

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

func attr(s attribute.Set, k string) string {
	v, _ := s.Value(attribute.Key(k))
	return v.String()
}

func TestRecorder(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewSpanRecorder()
	rec, err := New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m := mysis.Mysis{Name: "miner-1", Provider: "openai", Model: "gpt-4o-mini", Temperature: 0.7}

	_, end := rec.StartLLMCall(ctx, m)
	end(mysis.LlmCall{PromptTokens: 2006, CachedPromptTokens: 1920, CompletionTokens: 300, Latency: 1500 * time.Millisecond, CostNanos: 336_900})
	_, end = rec.StartLLMCall(ctx, m)
	end(mysis.LlmCall{Error: "openai: HTTP 429: slow down", Latency: 200 * time.Millisecond, Retries: 3})
	rec.TurnDone(ctx, m, "ok")
	rec.TurnDone(ctx, m, "error")
	rec.ToolCalled(ctx, "mine", false, time.Millisecond)
	rec.ToolCalled(ctx, "mine", true, time.Millisecond)
	rec.ToolCalled(ctx, "sell", true, time.Millisecond)
	rec.Composed(ctx, m, 6000, 8000)
	rec.SpendStopped(ctx, m, "swarm")
	rec.ReplyDiscarded(ctx, m)

	got := collect(t, reader)
	tok := got["gen_ai.client.token.usage"].(metricdata.Histogram[int64])
	sums := map[string]int64{}
	for _, dp := range tok.DataPoints {
		if attr(dp.Attributes, "gen_ai.provider.name") != "openai" || attr(dp.Attributes, "gen_ai.request.model") != "gpt-4o-mini" || attr(dp.Attributes, "gen_ai.operation.name") != "chat" {
			t.Fatalf("token usage attributes %v", dp.Attributes)
		}
		sums[attr(dp.Attributes, "gen_ai.token.type")] += dp.Sum
	}
	if sums["input"] != 2006 || sums["output"] != 300 || len(sums) != 2 {
		t.Fatalf("token usage %v (a failed call records none)", sums)
	}
	dur := got["gen_ai.client.operation.duration"].(metricdata.Histogram[float64])
	var n uint64
	errTypes := map[string]uint64{}
	for _, dp := range dur.DataPoints {
		n += dp.Count
		errTypes[attr(dp.Attributes, "error.type")] += dp.Count
	}
	if n != 2 || errTypes["429"] != 1 {
		t.Fatalf("durations %d, error types %v", n, errTypes)
	}
	perMysis := map[string]int64{}
	for _, dp := range got["zoea.llm.tokens"].(metricdata.Sum[int64]).DataPoints {
		perMysis[attr(dp.Attributes, "zoea.mysis.name")+"/"+attr(dp.Attributes, "gen_ai.token.type")] += dp.Value
	}
	if perMysis["miner-1/input"] != 86 || perMysis["miner-1/cached_input"] != 1920 || perMysis["miner-1/output"] != 300 {
		t.Fatalf("tokens per mysis %v", perMysis)
	}
	cost := got["zoea.llm.cost_usd"].(metricdata.Sum[float64]).DataPoints
	if len(cost) != 1 || cost[0].Value != 0.0003369 {
		t.Fatalf("cost %+v", cost)
	}
	turns := map[string]int64{}
	for _, dp := range got["zoea.turns"].(metricdata.Sum[int64]).DataPoints {
		turns[attr(dp.Attributes, "zoea.outcome")] += dp.Value
	}
	tools := map[string]int64{}
	for _, dp := range got["zoea.tool.calls"].(metricdata.Sum[int64]).DataPoints {
		tools[attr(dp.Attributes, "zoea.tool.name")+"/"+attr(dp.Attributes, "zoea.outcome")] += dp.Value
	}
	if turns["ok"] != 1 || turns["error"] != 1 || tools["mine/ok"] != 1 || tools["mine/error"] != 1 || tools["sell/error"] != 1 {
		t.Fatalf("turns %v tools %v", turns, tools)
	}
	ratio := got["zoea.compose.budget_ratio"].(metricdata.Histogram[float64]).DataPoints
	size := got["zoea.compose.tokens"].(metricdata.Histogram[int64]).DataPoints
	if len(ratio) != 1 || ratio[0].Sum != 0.75 || len(size) != 1 || size[0].Sum != 6000 {
		t.Fatalf("composed %+v %+v", ratio, size)
	}
	stops := got["zoea.spend.limit_stops"].(metricdata.Sum[int64]).DataPoints
	if len(stops) != 1 || stops[0].Value != 1 || attr(stops[0].Attributes, "zoea.spend.scope") != "swarm" {
		t.Fatalf("stops %+v", stops)
	}
	discarded := got["zoea.llm.replies_discarded"].(metricdata.Sum[int64]).DataPoints
	if len(discarded) != 1 || discarded[0].Value != 1 || attr(discarded[0].Attributes, "zoea.mysis.name") != "miner-1" {
		t.Fatalf("discarded replies %+v", discarded)
	}

	ended := spans.Ended()
	if len(ended) != 2 || ended[0].Name() != "chat gpt-4o-mini" || ended[0].SpanKind().String() != "client" {
		t.Fatalf("spans %v", ended)
	}
	want := map[string]string{"gen_ai.usage.input_tokens": "2006", "gen_ai.usage.output_tokens": "300", "gen_ai.usage.cache_read.input_tokens": "1920", "gen_ai.provider.name": "openai"}
	have := map[string]string{}
	for _, kv := range ended[0].Attributes() {
		have[string(kv.Key)] = kv.Value.String()
	}
	for k, v := range want {
		if have[k] != v {
			t.Fatalf("span attribute %s = %q, want %q (all %v)", k, have[k], v, have)
		}
	}
	if ended[1].Status().Code.String() != "Error" {
		t.Fatalf("failed call's span status %v", ended[1].Status())
	}
}
