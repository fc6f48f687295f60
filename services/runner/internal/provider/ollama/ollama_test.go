package ollama

import (
	"bytes"
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
	"testing"
	"time"

	"github.com/ollama/ollama/envconfig"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/redact"
	"github.com/zoeaswarm/zoea/libs/redact/redacttest"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/provider/internal/contract"
)

// fakeOllama is an httptest server speaking Ollama's /api/show and /api/chat. Chat answers are scripted: each
// call pops the next reply (status, headers, body).
type fakeOllama struct {
	t            *testing.T
	srv          *httptest.Server
	capabilities []string

	mu        sync.Mutex
	replies   []reply
	chatBody  [][]byte // request bodies /api/chat received
	showCalls int
}

type reply struct {
	status int
	header map[string]string
	body   string
}

func newFakeOllama(t *testing.T, capabilities []string, replies ...reply) *fakeOllama {
	f := &fakeOllama{t: t, capabilities: capabilities, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeOllama) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/api/show":
		f.showCalls++
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		caps, _ := json.Marshal(f.capabilities)
		_, _ = io.WriteString(w, `{"license":"","modelfile":"# Modelfile","parameters":"temperature 0.6","template":"{{ .Prompt }}",`+
			`"details":{"parent_model":"","format":"gguf","family":"qwen3","families":["qwen3"],"parameter_size":"8.2B","quantization_level":"Q4_K_M"},`+
			`"model_info":{"general.architecture":"qwen3"},"capabilities":`+string(caps)+`,"modified_at":"2026-10-01T12:00:00.000000000Z"}`)
	case "/api/chat":
		if r.Method != http.MethodPost {
			f.t.Errorf("chat method %s", r.Method)
		}
		f.chatBody = append(f.chatBody, body)
		if len(f.replies) == 0 {
			f.t.Errorf("unexpected chat call %s", body)
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		rep := f.replies[0]
		f.replies = f.replies[1:]
		for k, v := range rep.header {
			w.Header().Set(k, v)
		}
		if rep.status == 0 {
			rep.status = http.StatusOK
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
		}
		w.WriteHeader(rep.status)
		_, _ = io.WriteString(w, rep.body)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeOllama) provider(t *testing.T, cfg Config) *Provider {
	t.Helper()
	cfg.BaseURL = f.srv.URL
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (f *fakeOllama) lastChat() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.chatBody[len(f.chatBody)-1]
}

// travelTool is a real SpaceMolt tool schema as the MCP server lists it.
var travelTool = llm.Tool{
	Name:        "travel",
	Description: "Travel to a POI in your current system.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"target_poi":{"type":"string","description":"POI id from get_system."}},"required":["target_poi"],"additionalProperties":false}`),
}

// conversation is one tool loop: the travel call, its result, and a get_status call whose result has no name.
func conversation() []chat.Message {
	return []chat.Message{
		{Role: chat.RoleSystem, Content: "You are a SpaceMolt miner."},
		{Role: chat.RoleUser, Content: "Mine iron."},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{
			{ID: "call_1", Name: "travel", Arguments: `{"target_poi":"main_belt"}`},
			{ID: "call_2", Name: "get_status", Arguments: `{}`},
		}},
		{Role: chat.RoleTool, ToolCallID: "call_1", Name: "travel", Content: `{"action":"travel","poi":"Main Belt","poi_id":"main_belt"}`},
		{Role: chat.RoleTool, ToolCallID: "call_2", Content: `{"player":{"current_poi":"main_belt"}}`},
	}
}

// A non-streaming reply as Ollama 0.12+ sends it: thinking, a tool call without id, metrics.
const chatReplyNoID = `{"model":"qwen3:8b","created_at":"2026-11-22T02:00:00.123456789Z","message":{"role":"assistant","content":"",` +
	`"thinking":"At the belt with free cargo, so mine.","tool_calls":[{"function":{"index":0,"name":"mine","arguments":{}}},` +
	`{"function":{"index":1,"name":"travel","arguments":{"target_poi":"sol_central"}}}]},` +
	`"done_reason":"stop","done":true,"total_duration":2210739542,"load_duration":31234000,"prompt_eval_count":412,` +
	`"prompt_eval_duration":180000000,"eval_count":37,"eval_duration":1900000000}`

func TestChatWireFormat(t *testing.T) {
	f := newFakeOllama(t, []string{"completion", "tools", "thinking"}, reply{body: chatReplyNoID}, reply{body: chatReplyNoID})
	p := f.provider(t, Config{NumCtx: 8192})
	req := llm.Request{Model: "qwen3:8b", Temperature: 0.7, Messages: conversation(), Tools: []llm.Tool{travelTool}}

	resp, err := p.Chat(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}

	wantReq := `{"model":"qwen3:8b","messages":[` +
		`{"role":"system","content":"You are a SpaceMolt miner."},` +
		`{"role":"user","content":"Mine iron."},` +
		`{"role":"assistant","content":"","tool_calls":[` +
		`{"id":"call_1","function":{"index":0,"name":"travel","arguments":{"target_poi":"main_belt"}}},` +
		`{"id":"call_2","function":{"index":1,"name":"get_status","arguments":{}}}]},` +
		`{"role":"tool","content":"{\"action\":\"travel\",\"poi\":\"Main Belt\",\"poi_id\":\"main_belt\"}","tool_name":"travel","tool_call_id":"call_1"},` +
		`{"role":"tool","content":"{\"player\":{\"current_poi\":\"main_belt\"}}","tool_name":"get_status","tool_call_id":"call_2"}],` +
		`"stream":false,` +
		`"tools":[{"type":"function","function":{"name":"travel","description":"Travel to a POI in your current system.",` +
		`"parameters":{"type":"object","required":["target_poi"],"properties":{"target_poi":{"type":"string","description":"POI id from get_system."}}}}}],` +
		`"options":{"num_ctx":8192,"temperature":0.7},"think":true}`
	if got := f.lastChat(); string(got) != wantReq {
		t.Fatalf("request body\n got %s\nwant %s", got, wantReq)
	}

	if resp.Reasoning != "At the belt with free cargo, so mine." || resp.Message.Role != chat.RoleAssistant || resp.Message.Content != "" {
		t.Fatalf("response = %+v", resp)
	}
	if resp.Usage != (llm.Usage{PromptTokens: 412, CompletionTokens: 37}) {
		t.Fatalf("usage = %+v", resp.Usage)
	}
	calls := resp.Message.ToolCalls
	if len(calls) != 2 || calls[0].Name != "mine" || calls[0].Arguments != `{}` ||
		calls[1].Name != "travel" || calls[1].Arguments != `{"target_poi":"sol_central"}` {
		t.Fatalf("tool calls = %+v", calls)
	}
	idShape := regexp.MustCompile(`^call_[0-9a-f]{12}_[01]$`)
	if !idShape.MatchString(calls[0].ID) || !idShape.MatchString(calls[1].ID) || calls[0].ID == calls[1].ID {
		t.Fatalf("invented ids %q, %q", calls[0].ID, calls[1].ID)
	}

	// Same request, same reply: the invented ids are the same too.
	again, err := p.Chat(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, resp) {
		t.Fatalf("second reply differs:\n%+v\n%+v", again, resp)
	}
	if f.showCalls != 1 {
		t.Fatalf("/api/show called %d times; the capability must be cached per model", f.showCalls)
	}
}

func TestChatKeepsServerIDsAndText(t *testing.T) {
	body := `{"model":"llama3.2","created_at":"2026-11-22T02:00:00Z","message":{"role":"assistant","content":"",` +
		`"tool_calls":[{"id":"call_k3j2","function":{"index":0,"name":"sell","arguments":{"quantity":35,"item_id":"iron_ore"}}}]},` +
		`"done_reason":"stop","done":true,"prompt_eval_count":10,"eval_count":5}`
	f := newFakeOllama(t, []string{"completion", "tools"}, reply{body: body})
	p := f.provider(t, Config{})
	resp, err := p.Chat(t.Context(), llm.Request{Model: "llama3.2", Messages: conversation()[:2]})
	if err != nil {
		t.Fatal(err)
	}
	want := []chat.ToolCall{{ID: "call_k3j2", Name: "sell", Arguments: `{"quantity":35,"item_id":"iron_ore"}`}}
	if !reflect.DeepEqual(resp.Message.ToolCalls, want) {
		t.Fatalf("tool calls = %+v; want the server's id and argument order kept", resp.Message.ToolCalls)
	}
	var sent map[string]any
	if err := json.Unmarshal(f.lastChat(), &sent); err != nil {
		t.Fatal(err)
	}
	if _, ok := sent["think"]; ok {
		t.Fatalf("think sent to a model without the thinking capability: %s", f.lastChat())
	}
	if _, ok := sent["tools"]; ok {
		t.Fatalf("tools sent when the request had none: %s", f.lastChat())
	}
	if sent["options"].(map[string]any)["temperature"] != 0.0 {
		t.Fatalf("temperature 0 must still be sent: %s", f.lastChat())
	}
}

func TestThinkSettings(t *testing.T) {
	done := `{"model":"m","created_at":"2026-11-22T02:00:00Z","message":{"role":"assistant","content":"ok"},"done":true}`
	for _, tc := range []struct {
		think, want string
	}{
		{ThinkOn, `"think":true`},
		{ThinkOff, `"think":false`},
		{"high", `"think":"high"`},
	} {
		f := newFakeOllama(t, nil, reply{body: done})
		if _, err := f.provider(t, Config{Think: tc.think}).Chat(t.Context(), llm.Request{Model: "m", Messages: conversation()[:2]}); err != nil {
			t.Fatal(err)
		}
		if !bytes.HasSuffix(f.lastChat(), []byte(tc.want+"}")) || f.showCalls != 0 {
			t.Errorf("think %q: body %s, show calls %d", tc.think, f.lastChat(), f.showCalls)
		}
	}
	if _, err := New(Config{Think: "maybe"}); err == nil {
		t.Fatal("New accepted think \"maybe\"")
	}
	if _, err := New(Config{BaseURL: "localhost"}); err == nil {
		t.Fatal("New accepted a base URL without scheme")
	}
}

// A server that streams anyway (or a proxy that forces it) is folded into one reply.
func TestChatFoldsStreamedChunks(t *testing.T) {
	body := `{"model":"m","created_at":"2026-11-22T02:00:00Z","message":{"role":"assistant","content":"","thinking":"Hmm, "},"done":false}` + "\n" +
		`{"model":"m","created_at":"2026-11-22T02:00:00Z","message":{"role":"assistant","content":"","thinking":"docked."},"done":false}` + "\n" +
		`{"model":"m","created_at":"2026-11-22T02:00:00Z","message":{"role":"assistant","content":"Selling "},"done":false}` + "\n" +
		`{"model":"m","created_at":"2026-11-22T02:00:00Z","message":{"role":"assistant","content":"now."},"done":false}` + "\n" +
		`{"model":"m","created_at":"2026-11-22T02:00:00Z","message":{"role":"assistant","content":""},"done_reason":"stop","done":true,"prompt_eval_count":3,"eval_count":4}` + "\n"
	f := newFakeOllama(t, []string{"thinking"}, reply{body: body})
	resp, err := f.provider(t, Config{}).Chat(t.Context(), llm.Request{Model: "m", Messages: conversation()[:2]})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "Selling now." || resp.Reasoning != "Hmm, docked." || resp.Usage.CompletionTokens != 4 {
		t.Fatalf("folded reply = %+v", resp)
	}
}

func TestChatTruncatedReplyIsTransient(t *testing.T) {
	body := `{"model":"m","created_at":"2026-11-22T02:00:00Z","message":{"role":"assistant","content":"par"},"done":false}` + "\n"
	f := newFakeOllama(t, nil, reply{body: body})
	_, err := f.provider(t, Config{Think: ThinkOff}).Chat(t.Context(), llm.Request{Model: "m", Messages: conversation()[:2]})
	if !llm.IsTransient(err) {
		t.Fatalf("err = %v; a reply without done should be retryable", err)
	}
}

func TestChatErrors(t *testing.T) {
	now := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
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
			reply:    reply{status: 429, header: map[string]string{"Retry-After": "7", "Content-Type": "application/json"}, body: `{"error":"too many requests"}`},
			wantCode: 429, wantRetryable: true, wantAfter: 7 * time.Second, wantMsg: "too many requests",
		},
		{
			name:     "429 with Retry-After HTTP-date",
			reply:    reply{status: 429, header: map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, body: `{"error":"slow down"}`},
			wantCode: 429, wantRetryable: true, wantAfter: 90 * time.Second, wantMsg: "slow down",
		},
		{
			name:     "429 with an empty body",
			reply:    reply{status: 429, header: map[string]string{"Retry-After": "2"}},
			wantCode: 429, wantRetryable: true, wantAfter: 2 * time.Second, wantMsg: "Too Many Requests",
		},
		{
			name:     "500 is retryable",
			reply:    reply{status: 500, body: `{"error":"llama runner process has terminated: signal: killed"}`},
			wantCode: 500, wantRetryable: true, wantMsg: "llama runner process has terminated: signal: killed",
		},
		{
			name:     "502 from a proxy with an HTML body",
			reply:    reply{status: 502, body: "<html>Bad Gateway</html>"},
			wantCode: 502, wantRetryable: true, wantMsg: "<html>Bad Gateway</html>",
		},
		{
			name:     "400 is not retryable",
			reply:    reply{status: 400, body: `{"error":"\"gemma2\" does not support tools"}`},
			wantCode: 400, wantMsg: `"gemma2" does not support tools`,
		},
		{
			name:     "404 unknown model",
			reply:    reply{status: 404, body: `{"error":"model \"nope\" not found, try pulling it first"}`},
			wantCode: 404, wantMsg: `model "nope" not found, try pulling it first`,
		},
		{
			name:     "401 is not retryable",
			reply:    reply{status: 401, body: `{"error":"unauthorized","signin_url":"https://ollama.com/connect?x"}`},
			wantCode: 401, wantMsg: "unauthorized (sign in at https://ollama.com/connect?x)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeOllama(t, nil, tc.reply)
			p := f.provider(t, Config{Think: ThinkOff, Now: func() time.Time { return now }})
			_, err := p.Chat(t.Context(), llm.Request{Model: "m", Messages: conversation()[:2]})
			var se *llm.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v (%T), want *llm.StatusError", err, err)
			}
			if se.Provider != "ollama" || se.StatusCode != tc.wantCode || se.Retryable() != tc.wantRetryable ||
				se.RetryAfter != tc.wantAfter || se.Message != tc.wantMsg {
				t.Fatalf("StatusError = %+v", se)
			}
		})
	}
}

func TestConnectionRefusedIsTransient(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	p, err := New(Config{BaseURL: url, Think: ThinkOff})
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

// Through WithRetry, a 429 followed by a 200 succeeds, and the wait is at least the server's Retry-After.
func TestRetryAfterThroughWithRetry(t *testing.T) {
	done := `{"model":"m","created_at":"2026-11-22T02:00:00Z","message":{"role":"assistant","content":"done"},"done":true}`
	f := newFakeOllama(t, nil,
		reply{status: 429, header: map[string]string{"Retry-After": "3"}, body: `{"error":"busy"}`},
		reply{body: done})
	s := &sleeps{}
	p := llm.WithRetry(f.provider(t, Config{Think: ThinkOff}), llm.RetryOptions{BaseDelay: 100 * time.Millisecond, Sleep: s.sleep})
	resp, err := p.Chat(t.Context(), llm.Request{Model: "m", Messages: conversation()[:2]})
	if err != nil || resp.Message.Content != "done" {
		t.Fatalf("Chat = %+v, %v", resp, err)
	}
	if len(s.waits) != 1 || s.waits[0] < 3*time.Second {
		t.Fatalf("waits = %v, want one wait of at least 3s", s.waits)
	}
	if len(f.chatBody) != 2 || !bytes.Equal(f.chatBody[0], f.chatBody[1]) {
		t.Fatalf("the retry must resend the same body: %q", f.chatBody)
	}
}

func TestUnknownRoleRejected(t *testing.T) {
	f := newFakeOllama(t, nil)
	_, err := f.provider(t, Config{Think: ThinkOff}).Chat(t.Context(), llm.Request{Model: "m", Messages: []chat.Message{{Role: "developer", Content: "x"}}})
	if err == nil || llm.IsRetryable(err) {
		t.Fatalf("err = %v", err)
	}
}

func TestContract(t *testing.T) {
	f := newFakeOllama(t, []string{"completion", "tools", "thinking"}, reply{body: chatReplyNoID}, reply{body: chatReplyNoID})
	contract.Run(t, f.provider(t, Config{}), llm.Request{
		Model: "qwen3:8b", Messages: conversation(),
		Tools: []llm.Tool{travelTool, {Name: "mine", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}},
	})
}

// HostURL reads an OLLAMA_HOST value as Ollama's own client does (its envconfig.Host is the oracle), and the adapter
// talks to the URL it gives, whatever OLLAMA_HOST says: the runner's configuration is the variable's one reader.
func TestHostURL(t *testing.T) {
	for _, v := range []string{"", "127.0.0.1:11434", "myhost", "myhost:8080", "0.0.0.0", ":11434", "[::1]:9000", "::1",
		"http://myhost", "https://myhost", "http://myhost:81/ollama", "https://gw.example:8443/a/b", "ollama.com"} {
		t.Setenv("OLLAMA_HOST", v)
		want := envconfig.Host()
		if v == ":11434" { // Ollama leaves the host empty, which dials the loopback: HostURL names it
			want.Host = "127.0.0.1:11434"
		}
		got, err := HostURL(v)
		if err != nil || got != want.String() {
			t.Errorf("HostURL(%q) = %q, %v; Ollama reads %q", v, got, err, want.String())
		}
	}
	if _, err := HostURL("myhost:port"); err == nil || !strings.Contains(err.Error(), "port") {
		t.Errorf("HostURL accepted a port that is not a number: %v", err)
	}

	done := `{"model":"m","created_at":"2026-11-22T02:00:00Z","message":{"role":"assistant","content":"hi"},"done":true}`
	f := newFakeOllama(t, nil, reply{body: done})
	host, err := HostURL(strings.TrimPrefix(f.srv.URL, "http://")) // the scheme-less form Ollama documents
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("OLLAMA_HOST", "http://127.0.0.1:1") // nothing listens there
	p, err := New(Config{BaseURL: host, Think: ThinkOff, Name: "ollama-gpu"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Chat(t.Context(), llm.Request{Model: "m", Messages: conversation()[:2]})
	if err != nil || resp.Message.Content != "hi" || p.Name() != "ollama-gpu" {
		t.Fatalf("Chat = %+v, %v (name %q)", resp, err, p.Name())
	}
}

// A server (or the proxy in front of it) that quotes a credential back never gets it into the adapter's error:
// the runner's redactor knows it (issue 41, finding 3).
func TestErrorsNeverQuoteASecret(t *testing.T) {
	const key = "q7Zx2LmN9vBw4RtY8uKp3HsD"
	for _, e := range redacttest.Echoes(key) {
		msg, _ := json.Marshal(e.Text)
		for name, r := range map[string]reply{
			"json 401":  {status: 401, body: `{"error":` + string(msg) + `}`},
			"json 403":  {status: 403, body: `{"error":` + string(msg) + `}`},
			"plain 502": {status: 502, body: e.Text},
		} {
			t.Run(e.Name+"/"+name, func(t *testing.T) {
				f := newFakeOllama(t, nil, r)
				p := f.provider(t, Config{Think: ThinkOff, Redactor: redact.New(key)})
				_, err := p.Chat(t.Context(), llm.Request{Model: "m", Messages: conversation()[:2]})
				if err == nil {
					t.Fatal("no error")
				}
				if leak := redacttest.Leak(err.Error(), key); leak != "" {
					t.Errorf("error quotes %q of the secret: %v", leak, err)
				}
			})
		}
	}
}

// A reply longer than the limit — one huge line, many lines from a server that streams although asked not to, a
// stream that never ends, a line longer than the client's own buffer — fails the call with a ReplyTooLargeError
// that is not retried, where the client alone would fold every line into memory, hang on a stream that never ends,
// or take a line it cannot read for a cut connection and retry it (issue 41, finding 2).
func TestOversizedRepliesFailUnread(t *testing.T) {
	line := func(content string, done bool) string {
		b, _ := json.Marshal(map[string]any{"model": "m", "created_at": "2026-11-22T02:00:00Z",
			"message": map[string]any{"role": "assistant", "content": content}, "done": done})
		return string(b) + "\n"
	}
	piece := line(strings.Repeat("ore ", 256), false)
	for name, c := range map[string]struct {
		limit     int64
		wantLimit int64
		write     func(w io.Writer) error
	}{
		"one 4 MiB line": {1 << 20, 1 << 20, func(w io.Writer) error {
			_, err := io.WriteString(w, line(strings.Repeat("ore ", 4<<20/4), true))
			return err
		}},
		"streamed anyway": {1 << 20, 1 << 20, func(w io.Writer) error {
			for range 4 << 20 / len(piece) {
				if _, err := io.WriteString(w, piece); err != nil {
					return err
				}
			}
			_, err := io.WriteString(w, line("", true))
			return err
		}},
		"never-ending stream": {1 << 20, 1 << 20, func(w io.Writer) error {
			for {
				if _, err := io.WriteString(w, piece); err != nil {
					return err
				}
			}
		}},
		"a line past the client's buffer": {32 << 20, clientMaxLine, func(w io.Writer) error {
			_, err := io.WriteString(w, line(strings.Repeat("ore ", 9<<20/4), true))
			return err
		}},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/x-ndjson")
				_ = c.write(w)
			}))
			t.Cleanup(srv.Close)
			p, err := New(Config{BaseURL: srv.URL, Think: ThinkOff, MaxReplyBytes: c.limit})
			if err != nil {
				t.Fatal(err)
			}
			var retries sleeps
			_, err = llm.WithRetry(p, llm.RetryOptions{Sleep: retries.sleep}).Chat(t.Context(), llm.Request{Model: "m", Messages: conversation()[:2]})
			var tl *llm.ReplyTooLargeError
			if !errors.As(err, &tl) || tl.Limit != c.wantLimit || llm.IsRetryable(err) || llm.IsTransient(err) || len(retries.waits) != 0 {
				t.Fatalf("err = %v (%T), retried %d times; want a ReplyTooLargeError at %d, not retried", err, err, len(retries.waits), c.wantLimit)
			}
			srv.CloseClientConnections()
		})
	}
}
