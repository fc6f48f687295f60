package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/redact/redacttest"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/provider/internal/contract"
)

// fakeServer speaks /v1/chat/completions with scripted replies, recording what it received.
type fakeServer struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex
	replies []reply
	bodies  [][]byte
	headers []http.Header
}

type reply struct {
	status int
	header map[string]string
	body   string
}

func newFakeServer(t *testing.T, replies ...reply) *fakeServer {
	f := &fakeServer{t: t, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		f.t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	f.bodies = append(f.bodies, body)
	f.headers = append(f.headers, r.Header.Clone())
	if len(f.replies) == 0 {
		f.t.Errorf("unexpected call %s", body)
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	rep := f.replies[0]
	f.replies = f.replies[1:]
	w.Header().Set("Content-Type", "application/json")
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(cmpOr(rep.status, http.StatusOK))
	_, _ = io.WriteString(w, rep.body)
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

func (f *fakeServer) provider(t *testing.T, cfg Config) *Provider {
	t.Helper()
	cfg.BaseURL = f.srv.URL + "/v1"
	if cfg.APIKey == "" {
		cfg.APIKey = "sk-test"
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (f *fakeServer) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

var travelTool = llm.Tool{
	Name:        "travel",
	Description: "Travel to a POI in your current system.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"target_poi":{"type":"string","description":"POI id from get_system."}},"required":["target_poi"]}`),
}

func conversation() []chat.Message {
	return []chat.Message{
		{Role: chat.RoleSystem, Content: "You are a SpaceMolt miner."},
		{Role: chat.RoleUser, Content: "Mine iron."},
		{Role: chat.RoleAssistant, Content: "Heading out.", ToolCalls: []chat.ToolCall{
			{ID: "call_1", Name: "travel", Arguments: `{"target_poi": "main_belt"}`},
			{ID: "call_2", Name: "get_status", Arguments: ``},
		}},
		{Role: chat.RoleTool, ToolCallID: "call_1", Name: "travel", Content: `{"action":"travel","poi_id":"main_belt"}`},
		{Role: chat.RoleTool, ToolCallID: "call_2", Name: "get_status", Content: `{"player":{"current_poi":"main_belt"}}`},
	}
}

// A vLLM reply: content null, reasoning_content, a tool call, usage with vLLM's extra fields.
const vllmReply = `{"id":"chatcmpl-9a1b2c","object":"chat.completion","created":1763776800,"model":"Qwen/Qwen3-8B",` +
	`"choices":[{"index":0,"message":{"role":"assistant","reasoning_content":"Cargo 70/70, heading to sol_central to sell.",` +
	`"content":null,"tool_calls":[{"id":"chatcmpl-tool-5c1d","type":"function","function":{"name":"travel","arguments":"{\"target_poi\": \"sol_central\"}"}}]},` +
	`"logprobs":null,"finish_reason":"tool_calls","stop_reason":null}],` +
	`"usage":{"prompt_tokens":812,"total_tokens":850,"completion_tokens":38,"prompt_tokens_details":null},"prompt_logprobs":null}`

func TestChatWireFormat(t *testing.T) {
	f := newFakeServer(t, reply{body: vllmReply})
	p := f.provider(t, Config{})
	resp, err := p.Chat(t.Context(), llm.Request{Model: "Qwen/Qwen3-8B", Temperature: 0.4, Messages: conversation(), Tools: []llm.Tool{travelTool}})
	if err != nil {
		t.Fatal(err)
	}

	wantReq := `{"messages":[` +
		`{"content":"You are a SpaceMolt miner.","role":"system"},` +
		`{"content":"Mine iron.","role":"user"},` +
		`{"content":"Heading out.","tool_calls":[` +
		`{"id":"call_1","function":{"arguments":"{\"target_poi\": \"main_belt\"}","name":"travel"},"type":"function"},` +
		`{"id":"call_2","function":{"arguments":"{}","name":"get_status"},"type":"function"}],"role":"assistant"},` +
		`{"content":"{\"action\":\"travel\",\"poi_id\":\"main_belt\"}","tool_call_id":"call_1","role":"tool"},` +
		`{"content":"{\"player\":{\"current_poi\":\"main_belt\"}}","tool_call_id":"call_2","role":"tool"}],` +
		`"model":"Qwen/Qwen3-8B","temperature":0.4,"tool_choice":"auto",` +
		`"tools":[{"function":{"name":"travel","description":"Travel to a POI in your current system.",` +
		`"parameters":{"properties":{"target_poi":{"description":"POI id from get_system.","type":"string"}},"required":["target_poi"],"type":"object"}},"type":"function"}]}`
	if got := string(f.bodies[0]); got != wantReq {
		t.Fatalf("request body\n got %s\nwant %s", got, wantReq)
	}
	if got := f.headers[0].Get("Authorization"); got != "Bearer sk-test" {
		t.Fatalf("Authorization = %q", got)
	}

	want := llm.Response{
		Message: chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{
			{ID: "chatcmpl-tool-5c1d", Name: "travel", Arguments: `{"target_poi": "sol_central"}`},
		}},
		Reasoning: "Cargo 70/70, heading to sol_central to sell.",
		Usage:     llm.Usage{PromptTokens: 812, CompletionTokens: 38},
	}
	if !reflect.DeepEqual(resp, want) {
		t.Fatalf("response\n got %+v\nwant %+v", resp, want)
	}
}

func TestChatReasoningFieldAndInventedIDs(t *testing.T) {
	// OpenRouter style: "reasoning" instead of reasoning_content, structured details ignored; a server that
	// sends no call ids and no type.
	body := `{"id":"gen-1","object":"chat.completion","created":1763776800,"model":"deepseek/deepseek-r1",` +
		`"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":"",` +
		`"reasoning":"Docked with ore: sell.","reasoning_details":[{"type":"reasoning.text","text":"Docked with ore: sell."}],` +
		`"tool_calls":[{"function":{"name":"sell","arguments":"{\"item_id\":\"iron_ore\",\"quantity\":35}"}},{"function":{"name":"get_status","arguments":""}}]}}],` +
		`"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}}`
	f := newFakeServer(t, reply{body: body}, reply{body: body})
	p := f.provider(t, Config{})
	req := llm.Request{Model: "deepseek/deepseek-r1", Messages: conversation()[:2]}
	resp, err := p.Chat(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Reasoning != "Docked with ore: sell." {
		t.Fatalf("reasoning = %q", resp.Reasoning)
	}
	calls := resp.Message.ToolCalls
	shape := regexp.MustCompile(`^call_[0-9a-f]{12}_[01]$`)
	if len(calls) != 2 || !shape.MatchString(calls[0].ID) || !shape.MatchString(calls[1].ID) ||
		calls[0].Arguments != `{"item_id":"iron_ore","quantity":35}` || calls[1].Arguments != "{}" {
		t.Fatalf("tool calls = %+v", calls)
	}
	again, err := p.Chat(t.Context(), req)
	if err != nil || !reflect.DeepEqual(again, resp) {
		t.Fatalf("same request gave a different reply: %+v, %v", again, err)
	}
	// No tools: no tool_choice either (OpenAI rejects it alone); temperature 0 is still sent.
	var sent map[string]any
	_ = json.Unmarshal(f.bodies[0], &sent)
	if _, ok := sent["tool_choice"]; ok {
		t.Fatalf("tool_choice sent without tools: %s", f.bodies[0])
	}
	if sent["temperature"] != 0.0 {
		t.Fatalf("temperature missing: %s", f.bodies[0])
	}
}

// The key may come from OPENAI_API_KEY, but the base URL never comes from the environment: the runner's
// configuration is OPENAI_BASE_URL's one reader and passes it as Config.BaseURL; empty is OpenAI's own API.
func TestChatEnvironment(t *testing.T) {
	f := newFakeServer(t)
	t.Setenv("OPENAI_BASE_URL", f.srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	var got []*http.Request
	client := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		got = append(got, r)
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(vllmReply)), Request: r}, nil
	})}
	p, err := New(Config{HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "openai" {
		t.Fatalf("Name() = %q", p.Name())
	}
	if _, err := p.Chat(t.Context(), llm.Request{Model: "m", Messages: conversation()[:2]}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].URL.String() != DefaultBaseURL+"/chat/completions" || len(f.bodies) != 0 {
		t.Fatalf("requests %v (and %d to OPENAI_BASE_URL's server), want one to %s/chat/completions", got, len(f.bodies), DefaultBaseURL)
	}
	if auth := got[0].Header.Get("Authorization"); auth != "Bearer sk-from-env" {
		t.Fatalf("Authorization = %q", auth)
	}
	if _, err := New(Config{BaseURL: "not a url"}); err == nil {
		t.Fatal("New accepted a relative base URL")
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestChatErrors(t *testing.T) {
	now := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	rateLimit := `{"error":{"message":"Rate limit reached for gpt-4.1-mini on requests per min (RPM): Limit 3, Used 3, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	tests := []struct {
		name          string
		reply         reply
		wantCode      int
		wantRetryable bool
		wantAfter     time.Duration
		wantMsg       string
	}{
		{
			name:     "429 with Retry-After seconds",
			reply:    reply{status: 429, header: map[string]string{"Retry-After": "20"}, body: rateLimit},
			wantCode: 429, wantRetryable: true, wantAfter: 20 * time.Second,
			wantMsg: "Rate limit reached for gpt-4.1-mini on requests per min (RPM): Limit 3, Used 3, Requested 1.",
		},
		{
			name:     "429 with retry-after-ms beside Retry-After",
			reply:    reply{status: 429, header: map[string]string{"Retry-After": "1", "Retry-After-Ms": "850"}, body: rateLimit},
			wantCode: 429, wantRetryable: true, wantAfter: 850 * time.Millisecond,
			wantMsg: "Rate limit reached for gpt-4.1-mini on requests per min (RPM): Limit 3, Used 3, Requested 1.",
		},
		{
			name:     "429 with Retry-After HTTP-date",
			reply:    reply{status: 429, header: map[string]string{"Retry-After": now.Add(45 * time.Second).Format(http.TimeFormat)}, body: rateLimit},
			wantCode: 429, wantRetryable: true, wantAfter: 45 * time.Second,
			wantMsg: "Rate limit reached for gpt-4.1-mini on requests per min (RPM): Limit 3, Used 3, Requested 1.",
		},
		{
			name:     "500 is retryable",
			reply:    reply{status: 500, body: `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`},
			wantCode: 500, wantRetryable: true, wantMsg: "The server had an error while processing your request.",
		},
		{
			name:     "503 with a plain-text body",
			reply:    reply{status: 503, header: map[string]string{"Content-Type": "text/plain"}, body: "upstream connect error"},
			wantCode: 503, wantRetryable: true, wantMsg: "upstream connect error",
		},
		{
			name:     "400 is not retryable",
			reply:    reply{status: 400, body: `{"error":{"message":"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.","type":"invalid_request_error","param":"messages.[3].role","code":null}}`},
			wantCode: 400, wantMsg: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
		},
		{
			name:     "400 in vLLM's shape",
			reply:    reply{status: 400, body: `{"object":"error","message":"This model's maximum context length is 8192 tokens.","type":"BadRequestError","param":null,"code":400}`},
			wantCode: 400, wantMsg: "This model's maximum context length is 8192 tokens.",
		},
		{
			name:     "401 is not retryable",
			reply:    reply{status: 401, body: `{"error":{"message":"Incorrect API key provided: sk-test.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`},
			wantCode: 401, wantMsg: "Incorrect API key provided: sk-test.",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServer(t, tc.reply)
			p := f.provider(t, Config{Now: func() time.Time { return now }})
			_, err := p.Chat(t.Context(), llm.Request{Model: "gpt-4.1-mini", Messages: conversation()[:2]})
			var se *llm.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v (%T), want *llm.StatusError", err, err)
			}
			if se.Provider != "openai" || se.StatusCode != tc.wantCode || se.Retryable() != tc.wantRetryable ||
				se.RetryAfter != tc.wantAfter || se.Message != tc.wantMsg {
				t.Fatalf("StatusError = %+v", se)
			}
			if f.calls() != 1 {
				t.Fatalf("server saw %d calls; the SDK must not retry on its own", f.calls())
			}
		})
	}
}

func TestConnectionRefusedIsTransient(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close()
	p, err := New(Config{BaseURL: base + "/v1", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Chat(t.Context(), llm.Request{Model: "m", Messages: conversation()[:2]})
	if err == nil || !llm.IsTransient(err) {
		t.Fatalf("err = %v; connection refused should be transient", err)
	}
}

type sleeps struct{ waits []time.Duration }

func (s *sleeps) sleep(_ context.Context, d time.Duration) error {
	s.waits = append(s.waits, d)
	return nil
}

// Through WithRetry, a 429 followed by a 200 succeeds after waiting at least Retry-After.
func TestRetryAfterThroughWithRetry(t *testing.T) {
	f := newFakeServer(t,
		reply{status: 429, header: map[string]string{"Retry-After": "4"}, body: `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`},
		reply{body: vllmReply})
	s := &sleeps{}
	p := llm.WithRetry(f.provider(t, Config{}), llm.RetryOptions{BaseDelay: 100 * time.Millisecond, Sleep: s.sleep})
	resp, err := p.Chat(t.Context(), llm.Request{Model: "m", Messages: conversation()[:2]})
	if err != nil || len(resp.Message.ToolCalls) != 1 {
		t.Fatalf("Chat = %+v, %v", resp, err)
	}
	if len(s.waits) != 1 || s.waits[0] < 4*time.Second {
		t.Fatalf("waits = %v, want one wait of at least 4s", s.waits)
	}
	if f.calls() != 2 || string(f.bodies[0]) != string(f.bodies[1]) {
		t.Fatalf("the retry must resend the same body: %q", f.bodies)
	}
}

func TestNoChoices(t *testing.T) {
	f := newFakeServer(t, reply{body: `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[]}`})
	_, err := f.provider(t, Config{}).Chat(t.Context(), llm.Request{Model: "m", Messages: conversation()[:2]})
	if err == nil {
		t.Fatal("a reply without choices was accepted")
	}
}

func TestContract(t *testing.T) {
	f := newFakeServer(t, reply{body: vllmReply}, reply{body: vllmReply})
	contract.Run(t, f.provider(t, Config{}), llm.Request{Model: "Qwen/Qwen3-8B", Messages: conversation(), Tools: []llm.Tool{travelTool}})
}

// A provider that quotes the key back — in the JSON error, in a body that is not JSON, in a header dump — never
// gets it into the error the runner logs, stores and shows; nor does a base URL that carries it in its query when
// the server cannot be reached (issue 41, finding 3).
func TestErrorsNeverQuoteTheKey(t *testing.T) {
	const key = "q7Zx2LmN9vBw4RtY8uKp3HsD"
	for _, e := range redacttest.Echoes(key) {
		msg, _ := json.Marshal(e.Text)
		for name, r := range map[string]reply{
			"json 401":   {status: 401, body: `{"error":{"message":` + string(msg) + `,"type":"invalid_request_error","code":"invalid_api_key"}}`},
			"plain 401":  {status: 401, header: map[string]string{"Content-Type": "text/plain"}, body: e.Text},
			"vllm shape": {status: 403, body: `{"object":"error","message":` + string(msg) + `}`},
		} {
			t.Run(e.Name+"/"+name, func(t *testing.T) {
				f := newFakeServer(t, r)
				p := f.provider(t, Config{APIKey: key})
				_, err := p.Chat(t.Context(), llm.Request{Model: "gpt-4.1-mini", Messages: conversation()[:2]})
				if err == nil {
					t.Fatal("no error")
				}
				if leak := redacttest.Leak(err.Error(), key); leak != "" {
					t.Errorf("error quotes %q of the key: %v", leak, err)
				}
				var se *llm.StatusError
				if !errors.As(err, &se) || se.Retryable() || redacttest.Leak(se.Message, key) != "" {
					t.Errorf("StatusError = %+v", se)
				}
			})
		}
	}
	t.Run("unreachable base URL with the key in its query", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		base := srv.URL
		srv.Close()
		p, err := New(Config{BaseURL: base + "/v1?api_key=" + key, APIKey: key})
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Chat(t.Context(), llm.Request{Model: "m", Messages: conversation()[:2]})
		if err == nil || !llm.IsTransient(err) || redacttest.Leak(err.Error(), key) != "" {
			t.Fatalf("err = %v (transient %v)", err, llm.IsTransient(err))
		}
	})
}

// streamingServer answers chat completions with what write sends, counting the bytes that got out: the test sees
// that the runner stopped reading, not only that it failed.
func streamingServer(t *testing.T, contentType string, write func(w io.Writer) error) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_ = write(countingWriter{w: w, n: &sent, ctx: r.Context()})
	}))
	t.Cleanup(srv.Close)
	return srv, &sent
}

type countingWriter struct {
	w   io.Writer
	n   *atomic.Int64
	ctx context.Context
}

func (c countingWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// endless writes piece forever (until the client goes away).
func endless(piece string) func(io.Writer) error {
	return func(w io.Writer) error {
		for {
			if _, err := io.WriteString(w, piece); err != nil {
				return err
			}
		}
	}
}

// A reply longer than the limit — one huge completion, a body that never ends, an event stream sent to a
// non-streaming call — fails the call with a ReplyTooLargeError that is not retried, after reading no more than
// the limit: the runner's memory stays bounded whatever the server sends (issue 41, finding 2).
func TestOversizedRepliesFailUnread(t *testing.T) {
	const limit = 1 << 20
	huge := `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("ore ", 16<<20/4) + `"},"finish_reason":"stop"}]}`
	for name, c := range map[string]struct {
		contentType string
		write       func(io.Writer) error
	}{
		"16 MiB completion":      {"application/json", func(w io.Writer) error { _, err := io.WriteString(w, huge); return err }},
		"never-ending body":      {"application/json", endless(`{"choices":[` + strings.Repeat(" ", 4096))},
		"never-ending SSE":       {"text/event-stream", endless(`data: {"choices":[{"delta":{"content":"ore "}}]}` + "\n\n")},
		"never-ending JSON text": {"application/json", func(w io.Writer) error { _, _ = io.WriteString(w, `{"x":"`); return endless("ore ")(w) }},
	} {
		t.Run(name, func(t *testing.T) {
			srv, sent := streamingServer(t, c.contentType, c.write)
			p, err := New(Config{BaseURL: srv.URL + "/v1", APIKey: "k", MaxReplyBytes: limit})
			if err != nil {
				t.Fatal(err)
			}
			var retries sleeps
			_, err = llm.WithRetry(p, llm.RetryOptions{Sleep: retries.sleep}).Chat(t.Context(), llm.Request{Model: "m", Messages: conversation()[:2]})
			var tl *llm.ReplyTooLargeError
			if !errors.As(err, &tl) || tl.Limit != limit || llm.IsRetryable(err) || llm.IsTransient(err) || len(retries.waits) != 0 {
				t.Fatalf("err = %v (%T), retried %d times; want a ReplyTooLargeError, not retried", err, err, len(retries.waits))
			}
			if !strings.Contains(err.Error(), "larger than 1 MiB") {
				t.Errorf("message %q does not say the limit", err)
			}
			srv.CloseClientConnections()
			// What the server got out is the limit plus what the sockets buffer, not the reply.
			if n := sent.Load(); n > limit+8<<20 {
				t.Errorf("the server sent %d bytes: the reply was read on past the limit", n)
			}
		})
	}
}
