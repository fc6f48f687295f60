// Package llmmetrics implements mysis.Metrics with OpenTelemetry: a client span and the GenAI semantic-convention
// metrics (gen_ai.client.token.usage, gen_ai.client.operation.duration) for every LLM call, plus Zoea's own
// instruments — tokens and cost per mysis, turns, tool calls by tool and outcome, composed tokens against the
// budget and spend-limit stops — that the Grafana dashboard in deploy/grafana reads.
package llmmetrics

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
)

// Attribute keys of the GenAI semantic conventions and Zoea's own.
const (
	AttrOperation     = attribute.Key("gen_ai.operation.name")
	AttrProvider      = attribute.Key("gen_ai.provider.name")
	AttrRequestModel  = attribute.Key("gen_ai.request.model")
	AttrTokenType     = attribute.Key("gen_ai.token.type")
	AttrTemperature   = attribute.Key("gen_ai.request.temperature")
	AttrInputTokens   = attribute.Key("gen_ai.usage.input_tokens")
	AttrOutputTokens  = attribute.Key("gen_ai.usage.output_tokens")
	AttrCachedTokens  = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	AttrErrorType     = attribute.Key("error.type")
	AttrMysis         = attribute.Key("zoea.mysis.name")
	AttrTool          = attribute.Key("zoea.tool.name")
	AttrOutcome       = attribute.Key("zoea.outcome")
	AttrScope         = attribute.Key("zoea.spend.scope")
	AttrComposedToken = attribute.Key("zoea.composed_tokens")
	AttrCostUSD       = attribute.Key("zoea.cost_usd")
	AttrRetries       = attribute.Key("zoea.retries")
)

// Bucket boundaries the GenAI conventions recommend.
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	ratioBuckets    = []float64{0.1, 0.25, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1}
)

// Recorder implements mysis.Metrics.
type Recorder struct {
	tracer trace.Tracer

	tokenUsage metric.Int64Histogram
	duration   metric.Float64Histogram

	mysisTokens metric.Int64Counter
	mysisCost   metric.Float64Counter
	turns       metric.Int64Counter
	toolCalls   metric.Int64Counter
	composed    metric.Int64Histogram
	budgetUse   metric.Float64Histogram
	spendStops  metric.Int64Counter
	discarded   metric.Int64Counter
}

var _ mysis.Metrics = (*Recorder)(nil)

// New creates the instruments on mp and the tracer on tp.
func New(mp metric.MeterProvider, tp trace.TracerProvider) (*Recorder, error) {
	const scope = "github.com/zoeaswarm/zoea/services/runner"
	m := mp.Meter(scope)
	r := &Recorder{tracer: tp.Tracer(scope)}
	var err error
	if r.tokenUsage, err = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used"), metric.WithExplicitBucketBoundaries(tokenBuckets...)); err != nil {
		return nil, err
	}
	if r.duration, err = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration"), metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, err
	}
	if r.mysisTokens, err = m.Int64Counter("zoea.llm.tokens", metric.WithUnit("{token}"),
		metric.WithDescription("Tokens per mysis and type (input, output, cached_input)")); err != nil {
		return nil, err
	}
	// Units in braces are annotations: the Prometheus names stay zoea_llm_cost_usd_total and
	// zoea_compose_budget_ratio, which the dashboard queries.
	if r.mysisCost, err = m.Float64Counter("zoea.llm.cost_usd", metric.WithUnit("{USD}"),
		metric.WithDescription("Cost of LLM calls per mysis, from the runner's price table")); err != nil {
		return nil, err
	}
	if r.turns, err = m.Int64Counter("zoea.turns", metric.WithUnit("{turn}"), metric.WithDescription("Turns by outcome")); err != nil {
		return nil, err
	}
	if r.toolCalls, err = m.Int64Counter("zoea.tool.calls", metric.WithUnit("{call}"), metric.WithDescription("Tool calls by tool and outcome")); err != nil {
		return nil, err
	}
	if r.composed, err = m.Int64Histogram("zoea.compose.tokens", metric.WithUnit("{token}"),
		metric.WithDescription("Composed request size"), metric.WithExplicitBucketBoundaries(tokenBuckets...)); err != nil {
		return nil, err
	}
	if r.budgetUse, err = m.Float64Histogram("zoea.compose.budget_ratio", metric.WithUnit("{ratio}"),
		metric.WithDescription("Composed tokens divided by the token budget"), metric.WithExplicitBucketBoundaries(ratioBuckets...)); err != nil {
		return nil, err
	}
	if r.spendStops, err = m.Int64Counter("zoea.spend.limit_stops", metric.WithUnit("{stop}"),
		metric.WithDescription("LLM calls a spend limit prevented, by scope")); err != nil {
		return nil, err
	}
	if r.discarded, err = m.Int64Counter("zoea.llm.replies_discarded", metric.WithUnit("{reply}"),
		metric.WithDescription("Paid final answers discarded because a commander prompt arrived during the call (at most one per turn)")); err != nil {
		return nil, err
	}
	return r, nil
}

// StartLLMCall implements mysis.Metrics: a client span "chat <model>" whose end records the GenAI metrics.
func (r *Recorder) StartLLMCall(ctx context.Context, m mysis.Mysis) (context.Context, func(mysis.LlmCall)) {
	base := []attribute.KeyValue{AttrOperation.String("chat"), AttrProvider.String(m.Provider), AttrRequestModel.String(m.Model)}
	ctx, span := r.tracer.Start(ctx, "chat "+m.Model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(append(base, AttrTemperature.Float64(m.Temperature), AttrMysis.String(m.Name))...))
	return ctx, func(c mysis.LlmCall) {
		attrs := base
		if c.Error != "" {
			attrs = append(attrs, AttrErrorType.String(errorType(c.Error)))
			span.SetStatus(codes.Error, c.Error)
		}
		r.duration.Record(ctx, c.Latency.Seconds(), metric.WithAttributes(attrs...))
		span.SetAttributes(AttrComposedToken.Int64(c.ComposedTokens), AttrRetries.Int(c.Retries))
		if c.Error == "" {
			r.tokenUsage.Record(ctx, c.PromptTokens, metric.WithAttributes(append(base, AttrTokenType.String("input"))...))
			r.tokenUsage.Record(ctx, c.CompletionTokens, metric.WithAttributes(append(base, AttrTokenType.String("output"))...))
			span.SetAttributes(AttrInputTokens.Int64(c.PromptTokens), AttrOutputTokens.Int64(c.CompletionTokens),
				AttrCachedTokens.Int64(c.CachedPromptTokens), AttrCostUSD.Float64(float64(c.CostNanos)/1e9))
			who := []attribute.KeyValue{AttrMysis.String(m.Name), AttrProvider.String(m.Provider), AttrRequestModel.String(m.Model)}
			r.mysisTokens.Add(ctx, c.PromptTokens-c.CachedPromptTokens, metric.WithAttributes(append(who, AttrTokenType.String("input"))...))
			r.mysisTokens.Add(ctx, c.CachedPromptTokens, metric.WithAttributes(append(who, AttrTokenType.String("cached_input"))...))
			r.mysisTokens.Add(ctx, c.CompletionTokens, metric.WithAttributes(append(who, AttrTokenType.String("output"))...))
			r.mysisCost.Add(ctx, float64(c.CostNanos)/1e9, metric.WithAttributes(who...))
		}
		span.End()
	}
}

// errorType keeps error.type low-cardinality: the provider's HTTP status when there is one, else a class.
func errorType(msg string) string {
	for _, code := range []string{"429", "500", "502", "503", "504", "400", "401", "403", "404", "408"} {
		if strings.Contains(msg, "HTTP "+code) {
			return code
		}
	}
	switch {
	case strings.Contains(msg, "deadline exceeded"):
		return "timeout"
	case strings.Contains(msg, "canceled"):
		return "canceled"
	}
	return "_OTHER"
}

// TurnDone implements mysis.Metrics.
func (r *Recorder) TurnDone(ctx context.Context, m mysis.Mysis, outcome string) {
	r.turns.Add(ctx, 1, metric.WithAttributes(AttrOutcome.String(outcome), AttrProvider.String(m.Provider)))
}

// ToolCalled implements mysis.Metrics.
func (r *Recorder) ToolCalled(ctx context.Context, tool string, isError bool, _ time.Duration) {
	outcome := "ok"
	if isError {
		outcome = "error"
	}
	r.toolCalls.Add(ctx, 1, metric.WithAttributes(AttrTool.String(tool), AttrOutcome.String(outcome)))
}

// Composed implements mysis.Metrics.
func (r *Recorder) Composed(ctx context.Context, m mysis.Mysis, tokens, budget int) {
	if tokens <= 0 {
		return
	}
	r.composed.Record(ctx, int64(tokens), metric.WithAttributes(AttrMysis.String(m.Name)))
	if budget > 0 {
		r.budgetUse.Record(ctx, float64(tokens)/float64(budget), metric.WithAttributes(AttrMysis.String(m.Name)))
	}
}

// SpendStopped implements mysis.Metrics.
func (r *Recorder) SpendStopped(ctx context.Context, m mysis.Mysis, scope string) {
	r.spendStops.Add(ctx, 1, metric.WithAttributes(AttrScope.String(scope), AttrMysis.String(m.Name)))
}

// ReplyDiscarded implements mysis.Metrics.
func (r *Recorder) ReplyDiscarded(ctx context.Context, m mysis.Mysis) {
	r.discarded.Add(ctx, 1, metric.WithAttributes(AttrMysis.String(m.Name), AttrProvider.String(m.Provider)))
}
