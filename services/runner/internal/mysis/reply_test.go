package mysis

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"unicode/utf8"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/chat/chatvalid"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

// replyStore is a fresh mysis in the Store port over the shared memory fake (fakeStore: libs/testsupport/memfake, held
// to the real service's append rules by libs/testsupport/memorycontract), to store checked replies in; what it refuses the real
// memory service refuses. The e2e suite proves the same against the real service.
func replyStore() (*fakeStore, string) {
	s := newFakeStore()
	s.add(Mysis{ID: "reply"})
	return s, "reply"
}

// The malformed replies from the robustness campaign: each is stored in a form the store accepts, and every call
// that cannot run is answered with a tool error that says what was wrong.
func TestCheckReplyCampaignCases(t *testing.T) {
	many := make([]chat.ToolCall, 130)
	for i := range many {
		many[i] = call(fmt.Sprintf("c%d", i), "get_status", `{}`)
	}
	cases := []struct {
		name      string
		calls     []chat.ToolCall
		content   string
		wantBad   []int  // indices answered with an error
		wantInErr string // a phrase every error contains
		check     func(t *testing.T, r replyCheck)
	}{
		{name: "truncated json", calls: []chat.ToolCall{call("a", "travel", `{"a":1`)}, wantBad: []int{0}, wantInErr: "not one JSON object",
			check: func(t *testing.T, r replyCheck) {
				raw, ok := unwrapArgs(r.Calls[0].Arguments)
				if !ok || raw != `{"a":1` {
					t.Errorf("the model's text is not kept readable: %q", r.Calls[0].Arguments)
				}
			}},
		{name: "trailing text", calls: []chat.ToolCall{call("a", "travel", `{} extra`)}, wantBad: []int{0}, wantInErr: "invalid character 'e'"},
		{name: "array", calls: []chat.ToolCall{call("a", "travel", `[1]`)}, wantBad: []int{0}, wantInErr: "an array is not an object"},
		{name: "invalid utf8 in args", calls: []chat.ToolCall{call("a", "travel", "{\"x\":\"\xff\"}")}, wantBad: []int{0}, wantInErr: "not valid UTF-8"},
		{name: "empty args mean none", calls: []chat.ToolCall{call("a", "get_status", ``)}, check: func(t *testing.T, r replyCheck) {
			if r.Calls[0].Arguments != "{}" {
				t.Errorf("args = %q", r.Calls[0].Arguments)
			}
		}},
		{name: "duplicate ids", calls: []chat.ToolCall{call("x", "get_status", `{}`), call("x", "mine", `{}`)}, check: func(t *testing.T, r replyCheck) {
			if r.Calls[0].ID != "x" || r.Calls[1].ID == "x" {
				t.Errorf("ids = %q, %q: the first keeps its id, the second gets a fresh one", r.Calls[0].ID, r.Calls[1].ID)
			}
		}},
		{name: "empty name", calls: []chat.ToolCall{call("a", "", `{}`)}, wantBad: []int{0}, wantInErr: "no tool name"},
		{name: "300-byte id", calls: []chat.ToolCall{call(strings.Repeat("i", 300), "get_status", `{}`)}, check: func(t *testing.T, r replyCheck) {
			if len(r.Calls[0].ID) > chat.MaxToolCallIDBytes {
				t.Errorf("id kept at %d bytes", len(r.Calls[0].ID))
			}
		}},
		{name: "130 calls", calls: many, wantInErr: "only the first 16 are run", check: func(t *testing.T, r replyCheck) {
			if len(r.Calls) != 17 || len(r.Problems) != 1 {
				t.Fatalf("stored %d calls with %d errors, want the 16 run and one answered with an error", len(r.Calls), len(r.Problems))
			}
			if !strings.Contains(r.Problems[16], "the 113 calls after this one were discarded") {
				t.Errorf("the discarded calls are not counted: %s", r.Problems[16])
			}
		}},
		{name: "NUL in content", content: "a\x00b\xffc", check: func(t *testing.T, r replyCheck) {
			if r.Content != "a\uFFFDb\uFFFDc" {
				t.Errorf("content = %q", r.Content)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := checkReply(chat.Message{Role: chat.RoleAssistant, Content: tc.content, ToolCalls: tc.calls}, "", 7, DefaultMaxCallsPerReply)
			assertStorableAndAnswerable(t, r, len(tc.calls), DefaultMaxCallsPerReply)
			for _, i := range tc.wantBad {
				if _, ok := r.Problems[i]; !ok {
					t.Errorf("call %d is not answered with an error", i)
				}
			}
			if tc.wantBad == nil && tc.wantInErr == "" && len(r.Problems) > 0 {
				t.Errorf("unexpected problems: %v", r.Problems)
			}
			for i, msg := range r.Problems {
				if !strings.HasPrefix(msg, "Error: invalid_tool_call: ") || !strings.Contains(msg, tc.wantInErr) || !strings.Contains(msg, "Nothing was run") {
					t.Errorf("call %d error %q lacks the code, %q or that nothing ran", i, msg, tc.wantInErr)
				}
				// A resumed turn derives the same verdict from the stored call alone.
				if _, bad := storedCallProblem(i, r.Calls[i], DefaultMaxCallsPerReply); !bad {
					t.Errorf("call %d: the stored form does not show it was bad: %+v", i, r.Calls[i])
				}
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// assertStorableAndAnswerable checks the invariant: the checked reply passes the store's rules, and the history
// [user, reply, one answer per call] passes every provider's rules.
func assertStorableAndAnswerable(t *testing.T, r replyCheck, sent, maxRun int) {
	t.Helper()
	content := r.Content
	if strings.TrimSpace(content) == "" && len(r.Calls) == 0 {
		content = "(no reply)"
	}
	store, id := replyStore()
	ctx := context.Background()
	if _, err := store.Append(ctx, id, []NewMemory{{Role: chat.RoleAssistant, Source: SourceLLM, Content: content, Reasoning: r.Reasoning, ToolCalls: r.Calls}}); err != nil {
		t.Fatalf("the store would refuse the checked reply: %v", err)
	}
	if len(r.Calls) != min(sent, maxRun+1, chat.MaxToolCallsPerMessage) {
		t.Fatalf("%d calls sent, %d stored", sent, len(r.Calls))
	}
	msgs := []chat.Message{{Role: chat.RoleUser, Content: "go"}, {Role: chat.RoleAssistant, Content: content, ToolCalls: r.Calls}}
	for _, c := range r.Calls {
		msgs = append(msgs, chat.Message{Role: chat.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: "ok"})
	}
	if err := chatvalid.Strict.Validate(msgs); err != nil {
		t.Fatalf("the stored reply would be refused by a provider: %v", err)
	}
	for i, msg := range r.Problems {
		if _, err := store.Append(ctx, id, []NewMemory{{Role: chat.RoleTool, Source: SourceTool, Content: msg, ToolCallID: r.Calls[i].ID, ToolName: r.Calls[i].Name}}); err != nil {
			t.Fatalf("the store would refuse the error answering call %d: %v", i, err)
		}
	}
}

// FuzzCheckReply: whatever a provider returns, the reply is storable, every call is answerable, and no call the
// model got right is reported as wrong.
func FuzzCheckReply(f *testing.F) {
	f.Add("hi", "think", `[{"id":"a","name":"travel","arguments":"{\"a\":1"}]`, 3)
	f.Add("", "", `[{"id":"x","name":"get_status","arguments":"{}"},{"id":"x","name":"","arguments":"{} extra"}]`, 16)
	f.Add("\x00", "\xff", `[{"id":"","name":"a b","arguments":"null"}]`, 1)
	f.Fuzz(func(t *testing.T, content, reasoning, callsJSON string, maxRun int) {
		var calls []chat.ToolCall
		if json.Unmarshal([]byte(callsJSON), &calls) != nil {
			// Not a call list: use the text itself as one call's id, name and arguments.
			calls = []chat.ToolCall{{ID: callsJSON, Name: callsJSON, Arguments: callsJSON}}
		}
		maxRun = 1 + (maxRun%200+200)%200
		r := checkReply(chat.Message{Role: chat.RoleAssistant, Content: content, ToolCalls: calls}, reasoning, 42, maxRun)
		assertStorableAndAnswerable(t, r, len(calls), maxRun)
		for i, c := range calls[:len(r.Calls)] {
			good := goodToolName(c.Name) && (strings.TrimSpace(c.Arguments) == "" || utf8.ValidString(c.Arguments) && isJSONObject(c.Arguments)) && i < maxRun
			if _, bad := r.Problems[i]; bad == good {
				t.Fatalf("call %d %+v: reported bad=%v", i, c, bad)
			}
		}
	})
}

// A reply full of bad calls neither errors the mysis nor costs a second LLM call for the same step: it is stored,
// the good call runs, each bad call is answered with a tool error, and the model's next request carries them all.
func TestBadToolCallsAreAnsweredNotFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Mysis{State: StateRunning}, Config{MaxCallsPerReply: 3})
		h.provider.script = func(n int, req llm.Request) (llm.Response, error) {
			if n == 0 {
				return reply("let me try",
					call("dup", "get_status", `{}`),
					call("dup", "mine", `{"a":1`),
					call("", "", `{}`),
					call(strings.Repeat("x", 300), "sell", `{} extra`),
					call("ok2", "get_status", `{}`),
				), nil
			}
			return reply("done"), nil
		}
		if _, err := h.store.Append(context.Background(), testID, []NewMemory{{Role: chat.RoleUser, Source: SourceDirect, Content: "Do it."}}); err != nil {
			t.Fatal(err)
		}
		h.start()
		h.eventually("the turn's final answer", func() bool {
			ms := h.store.all(testID)
			return len(ms) > 0 && ms[len(ms)-1].Role == chat.RoleAssistant && ms[len(ms)-1].Content == "done"
		})
		h.stop()
		if st := h.state(); st == StateErrored {
			t.Fatalf("mysis errored: %s", h.store.get(testID).StateReason)
		}
		if got := h.tools.called(); len(got) != 1 || got[0].Name != "get_status" || got[0].ID != "dup" {
			t.Fatalf("tools run: %+v, want only the first (good) get_status", got)
		}
		ms := h.store.all(testID)
		var asst Memory
		results := map[string]string{}
		for _, m := range ms {
			if m.Role == chat.RoleAssistant && len(m.ToolCalls) > 0 {
				asst = m
			}
			if m.Role == chat.RoleTool {
				results[m.ToolCallID] = m.Content
			}
		}
		if len(asst.ToolCalls) != 4 {
			t.Fatalf("stored calls: %+v", asst.ToolCalls)
		}
		for i, c := range asst.ToolCalls {
			res, ok := results[c.ID]
			if !ok {
				t.Errorf("call %d (%s) unanswered", i, c.ID)
				continue
			}
			if bad := strings.HasPrefix(res, "Error: invalid_tool_call:"); bad != (i > 0) {
				t.Errorf("call %d answered %q", i, res)
			}
		}
		if !strings.Contains(results[asst.ToolCalls[1].ID], "unexpected end of JSON input") {
			t.Errorf("the truncated JSON error does not say why: %s", results[asst.ToolCalls[1].ID])
		}
		if !strings.Contains(results[asst.ToolCalls[3].ID], "only the first 3 are run") || !strings.Contains(results[asst.ToolCalls[3].ID], "the 1 calls after this one were discarded") {
			t.Errorf("the call beyond the cap: %s", results[asst.ToolCalls[4].ID])
		}
		reqs := h.provider.requests()
		if len(reqs) < 2 {
			t.Fatalf("%d LLM calls", len(reqs))
		}
		last := reqs[1].Messages
		if n := len(last); last[n-1].Role != chat.RoleTool || last[n-4].Role != chat.RoleTool {
			t.Errorf("the second request does not end with the four answers: %+v", last[n-1])
		}
	})
}
