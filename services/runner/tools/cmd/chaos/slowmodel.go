package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// slowModel is a fake OpenAI-compatible chat completions server that takes slowMin–slowMax per answer, as reasoning
// models do. The runner's real openai provider talks to it over HTTP. It answers a prompt with one read-only tool
// call (get_status) and a tool result with a short final answer, so a turn has a call to answer and a final reply
// that a broadcast arriving meanwhile can race.
type slowModel struct {
	min, max time.Duration
	// answer is every final answer's text: 5 MB with -huge (the runner must store a bounded reply,
	// chat.MaxReplyBytes), else one sentence.
	answer string
	srv    *http.Server
	addr   string

	mu          sync.Mutex
	served, cut int
	seq         int
}

func newSlowModel(min, max time.Duration, huge bool) *slowModel {
	s := &slowModel{min: min, max: max, answer: "Status checked; holding position and reporting to the commander."}
	if huge {
		s.answer = strings.Repeat("Status checked, holding position. ", 5<<20/34) // the 5 MB a runaway model writes
	}
	return s
}

func (s *slowModel) url() string { return "http://" + s.addr + "/v1" }

func (s *slowModel) start() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.addr = l.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(l) }()
	return nil
}

func (s *slowModel) close() {
	if s.srv != nil {
		_ = s.srv.Close()
	}
}

func (s *slowModel) counts() (served, cut int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served, s.cut
}

type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role string `json:"role"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func (s *slowModel) chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	select {
	case <-time.After(jitter(s.min, s.max)):
	case <-r.Context().Done():
		s.mu.Lock()
		s.cut++
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	s.seq++
	n := s.seq
	s.mu.Unlock()
	msg := map[string]any{"role": "assistant", "content": s.answer}
	finish := "stop"
	hasStatus := false
	for _, t := range req.Tools {
		hasStatus = hasStatus || t.Function.Name == "get_status"
	}
	// A call when no tool result is among the last few messages (a fresh prompt), else the final answer: a result
	// followed by broadcasts gets an answer, not another call.
	recentResult := false
	for i := max(0, len(req.Messages)-3); i < len(req.Messages); i++ {
		recentResult = recentResult || req.Messages[i].Role == "tool"
	}
	if !recentResult && hasStatus {
		msg = map[string]any{"role": "assistant", "content": "", "tool_calls": []map[string]any{{
			"id": fmt.Sprintf("call_slow_%d", n), "type": "function",
			"function": map[string]any{"name": "get_status", "arguments": "{}"},
		}}}
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020},
	}); err != nil {
		return
	}
	s.mu.Lock()
	s.served++
	s.mu.Unlock()
}
