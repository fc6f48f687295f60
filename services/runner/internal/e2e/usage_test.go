package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/services/runner/internal/app"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
	"github.com/zoeaswarm/zoea/services/runner/internal/usage"
)

// wireModel is an HTTP model server speaking OpenAI's Chat Completions or Ollama's /api/chat with the probe's
// script (a tool call at a turn's start, then a final answer) and reporting usage the way each provider does,
// cached tokens included. It adds up what it reported, for comparison with what Zoea stored.
type wireModel struct {
	t      *testing.T
	ollama bool
	srv    *httptest.Server

	mu    sync.Mutex
	calls int
	sum   llm.Usage
	cost  int64
}

func newWireModel(t *testing.T, ollama bool) *wireModel {
	w := &wireModel{t: t, ollama: ollama}
	w.srv = httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *wireModel) serve(rw http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rw.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/api/show" {
		_, _ = io.WriteString(rw, `{"capabilities":["completion","tools"],"details":{"family":"qwen3"}}`)
		return
	}
	// The model lists the runner's provider check reads at create time.
	if r.URL.Path == "/api/tags" {
		_, _ = io.WriteString(rw, `{"models":[{"name":"qwen3:8b","model":"qwen3:8b","modified_at":"2026-11-01T10:00:00Z","size":5225388164,`+
			`"digest":"500a1f067a9f","details":{"format":"gguf","family":"qwen3","parameter_size":"8.2B","quantization_level":"Q4_K_M"}}]}`)
		return
	}
	if r.URL.Path == "/v1/models" {
		_, _ = io.WriteString(rw, `{"object":"list","data":[{"id":"gpt-4o-mini","object":"model","created":1721172741,"owned_by":"system"}]}`)
		return
	}
	var req struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		w.t.Errorf("bad model request %s: %v", body, err)
		rw.WriteHeader(http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	w.calls++
	n := w.calls
	u := llm.Usage{PromptTokens: 1000 + 7*n, CompletionTokens: 20 + n}
	if !w.ollama {
		u.CachedPromptTokens, u.ReasoningTokens = 512+n, 3
	}
	w.sum.PromptTokens += u.PromptTokens
	w.sum.CachedPromptTokens += u.CachedPromptTokens
	w.sum.CompletionTokens += u.CompletionTokens
	w.sum.ReasoningTokens += u.ReasoningTokens
	if !w.ollama {
		w.cost += usage.NewPrices(usage.DefaultPrices()).Cost("openai", "gpt-4o-mini", u)
	}
	w.mu.Unlock()

	toolTurn := req.Messages[len(req.Messages)-1].Role != "tool"
	switch {
	case w.ollama && toolTurn:
		fmt.Fprintf(rw, `{"model":"qwen3:8b","created_at":"2026-11-23T23:00:00Z","message":{"role":"assistant","content":"",`+
			`"tool_calls":[{"function":{"index":0,"name":"get_status","arguments":{}}}]},"done_reason":"stop","done":true,`+
			`"prompt_eval_count":%d,"eval_count":%d}`, u.PromptTokens, u.CompletionTokens)
	case w.ollama:
		fmt.Fprintf(rw, `{"model":"qwen3:8b","created_at":"2026-11-23T23:00:00Z","message":{"role":"assistant","content":"Status checked."},`+
			`"done_reason":"stop","done":true,"prompt_eval_count":%d,"eval_count":%d}`, u.PromptTokens, u.CompletionTokens)
	default:
		msg := `{"role":"assistant","content":"Status checked."}`
		finish := "stop"
		if toolTurn {
			msg = fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"get_status","arguments":"{}"}}]}`, n)
			finish = "tool_calls"
		}
		fmt.Fprintf(rw, `{"id":"chatcmpl-%d","object":"chat.completion","created":1763938800,"model":"gpt-4o-mini-2024-07-18",`+
			`"choices":[{"index":0,"message":%s,"finish_reason":"%s"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,`+
			`"prompt_tokens_details":{"cached_tokens":%d},"completion_tokens_details":{"reasoning_tokens":%d}}}`,
			n, msg, finish, u.PromptTokens, u.CompletionTokens, u.PromptTokens+u.CompletionTokens, u.CachedPromptTokens, u.ReasoningTokens)
	}
}

func (w *wireModel) totals() (int, llm.Usage, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls, w.sum, w.cost
}

// TestUsageOverTheWire: the real OpenAI and Ollama adapters talk to HTTP servers that report usage (OpenAI with
// cached and reasoning tokens); every call is stored with its reply, and the stored, aggregated and exported
// numbers equal what the servers reported, exactly.
func TestUsageOverTheWire(t *testing.T) {
	s := startStack(t)
	oai, oll := newWireModel(t, false), newWireModel(t, true)
	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewSpanRecorder()
	r := s.startRunnerOpts(t, "r1", nil, func(c *app.Config) {
		c.OpenAIBaseURL, c.OllamaHost = oai.srv.URL+"/v1", oll.srv.URL
	}, app.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))})
	ctx := context.Background()
	for _, c := range []*runnerv1.CreateMysisRequest{
		{Name: "oai", Provider: "openai", Model: "gpt-4o-mini", Start: true},
		{Name: "oll", Provider: "ollama", Model: "qwen3:8b", Start: true},
	} {
		if _, err := r.swarm.CreateMysis(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	// Three unanswered nudges make each mysis idle: a bounded number of calls, all finished.
	for _, name := range []string{"oai", "oll"} {
		s.eventually(t, 60*time.Second, name+" idle after its nudges", func() bool {
			m := getStatus(t, r, name).GetMysis()
			return m.GetState() == memoryv1.MysisState_MYSIS_STATE_IDLE && m.GetStateReason() == mysis.IdleReason
		})
	}

	u, err := r.swarm.GetUsage(ctx, &runnerv1.GetUsageRequest{GroupBy: memoryv1.UsageGroup_USAGE_GROUP_MYSIS})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*memoryv1.UsageTotals{}
	for _, row := range u.GetRows() {
		byName[row.GetMysisName()] = row.GetTotals()
	}
	for name, w := range map[string]*wireModel{"oai": oai, "oll": oll} {
		calls, sum, cost := w.totals()
		got := byName[name]
		if calls == 0 || got.GetCalls() != int64(calls) || got.GetFailedCalls() != 0 ||
			got.GetPromptTokens() != int64(sum.PromptTokens) || got.GetCachedPromptTokens() != int64(sum.CachedPromptTokens) ||
			got.GetCompletionTokens() != int64(sum.CompletionTokens) || got.GetReasoningTokens() != int64(sum.ReasoningTokens) ||
			got.GetCostNanos() != cost || got.GetComposedTokens() <= 0 {
			t.Fatalf("%s: stored %+v; the server reported %d calls, %+v, cost %d", name, got, calls, sum, cost)
		}
		// Every call's accounting is stored with an assistant memory.
		st := getStatus(t, r, name)
		assistants := 0
		for _, m := range s.allMemories(t, st.GetMysis().GetId()) {
			if m.GetRole() == memoryv1.Role_ROLE_ASSISTANT {
				assistants++
			}
		}
		if assistants != calls {
			t.Fatalf("%s: %d assistant memories for %d calls", name, assistants, calls)
		}
		if st.GetUsage().GetCalls() != int64(calls) || st.GetUsage().GetCostNanos() != cost {
			t.Fatalf("%s: GetMysis usage %+v", name, st.GetUsage())
		}
	}
	if u.GetTotal().GetCalls() != byName["oai"].GetCalls()+byName["oll"].GetCalls() {
		t.Fatalf("total %+v", u.GetTotal())
	}
	list, err := r.swarm.ListMyses(ctx, &runnerv1.ListMysesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range list.GetMyses() {
		if st.GetUsage().GetPromptTokens() != byName[st.GetMysis().GetName()].GetPromptTokens() {
			t.Fatalf("ListMyses usage of %s: %+v", st.GetMysis().GetName(), st.GetUsage())
		}
	}
	byModel, err := r.swarm.GetUsage(ctx, &runnerv1.GetUsageRequest{GroupBy: memoryv1.UsageGroup_USAGE_GROUP_MODEL, From: nil})
	if err != nil || len(byModel.GetRows()) != 2 || byModel.GetRows()[0].GetProvider() != "ollama" || byModel.GetRows()[1].GetModel() != "gpt-4o-mini" {
		t.Fatalf("by model %+v %v", byModel, err)
	}

	// The GenAI metrics carry the same numbers.
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]int64{} // provider/type → sum
	durations := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Name {
			case "gen_ai.client.token.usage":
				for _, dp := range m.Data.(metricdata.Histogram[int64]).DataPoints {
					prov, _ := dp.Attributes.Value("gen_ai.provider.name")
					typ, _ := dp.Attributes.Value("gen_ai.token.type")
					tokens[prov.AsString()+"/"+typ.AsString()] += dp.Sum
				}
			case "gen_ai.client.operation.duration":
				for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
					prov, _ := dp.Attributes.Value("gen_ai.provider.name")
					durations[prov.AsString()] += dp.Count
				}
			}
		}
	}
	for prov, w := range map[string]*wireModel{"openai": oai, "ollama": oll} {
		calls, sum, _ := w.totals()
		if tokens[prov+"/input"] != int64(sum.PromptTokens) || tokens[prov+"/output"] != int64(sum.CompletionTokens) || durations[prov] != uint64(calls) {
			t.Fatalf("%s metrics: tokens %v durations %v; want %+v over %d calls", prov, tokens, durations, sum, calls)
		}
	}
	chatSpans := 0
	for _, sp := range spans.Ended() {
		if strings.HasPrefix(sp.Name(), "chat ") {
			chatSpans++
		}
	}
	oc, _, _ := oai.totals()
	lc, _, _ := oll.totals()
	if chatSpans != oc+lc {
		t.Fatalf("%d chat spans for %d calls", chatSpans, oc+lc)
	}
}
