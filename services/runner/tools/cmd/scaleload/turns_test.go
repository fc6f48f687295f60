package main

import (
	"slices"
	"testing"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
)

// history builds a stored history the way the memory service numbers it: seq from 1, the turn advanced by every
// prompt (direct message, broadcast, nudge).
type history struct {
	ms         []*memoryv1.Memory
	seq, turn  int64
	callNumber int
}

func (h *history) add(m *memoryv1.Memory) *history {
	h.seq++
	if opensTurn(m) {
		h.turn++
	}
	m.Seq, m.Turn = h.seq, h.turn
	h.ms = append(h.ms, m)
	return h
}

func (h *history) system() *history {
	return h.add(&memoryv1.Memory{Role: memoryv1.Role_ROLE_SYSTEM, Source: memoryv1.Source_SOURCE_SYSTEM, Content: "You are a pilot."})
}

func (h *history) prompt(s memoryv1.Source, content string) *history {
	return h.add(&memoryv1.Memory{Role: memoryv1.Role_ROLE_USER, Source: s, Content: content})
}
func (h *history) nudge() *history { return h.prompt(memoryv1.Source_SOURCE_NUDGE, "Keep playing.") }
func (h *history) broadcast() *history {
	return h.prompt(memoryv1.Source_SOURCE_BROADCAST, "Mission: mine ore.")
}
func (h *history) direct() *history {
	return h.prompt(memoryv1.Source_SOURCE_DIRECT, "Dock at the station.")
}

// call stores an assistant message with one tool call and, if answered, its result.
func (h *history) call(answered bool) *history {
	h.callNumber++
	id := "call-" + string(rune('a'+h.callNumber))
	h.add(&memoryv1.Memory{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM,
		ToolCalls: []*memoryv1.ToolCall{{Id: id, Name: "mine"}}})
	if answered {
		h.add(&memoryv1.Memory{Role: memoryv1.Role_ROLE_TOOL, Source: memoryv1.Source_SOURCE_TOOL, ToolCallId: id, ToolName: "mine", Content: "ok"})
	}
	return h
}

func (h *history) final() *history {
	return h.add(&memoryv1.Memory{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, Content: "Mined 3 ore."})
}

func TestCountTurns(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    *history
		want turnCount
	}{
		{"empty history", &history{}, turnCount{}},
		{"only the system prompt: no turn", new(history).system(), turnCount{}},
		{"completed turns with tool loops", new(history).system().broadcast().call(true).call(true).final().
			nudge().call(true).final().nudge().final(), turnCount{completed: 3}},
		{"a turn cut by a stop and resumed under the same number completes",
			new(history).system().nudge().call(false).call(true).call(true).final(), turnCount{completed: 1}},
		{"open at the end because the run stopped", new(history).system().nudge().call(true).final().nudge().call(true),
			turnCount{completed: 1, openAtEnd: 1}},
		{"a prompt waiting at the end is open, not lost", new(history).system().nudge().final().broadcast(),
			turnCount{completed: 1, openAtEnd: 1}},
		{"superseded by a broadcast", new(history).system().nudge().call(true).broadcast().call(true).final(),
			turnCount{completed: 1, superseded: 1}},
		{"superseded by a direct message while a call was unanswered",
			new(history).system().nudge().call(false).direct().final(), turnCount{completed: 1, superseded: 1}},
		{"abandoned: a nudge opened the next turn", new(history).system().nudge().call(true).nudge().call(true).final(),
			turnCount{completed: 1, lost: 1, lostTurns: []int64{1}}},
		{"abandoned with an unanswered call, then more play", new(history).system().broadcast().final().
			nudge().call(false).nudge().final().nudge().call(true),
			turnCount{completed: 2, lost: 1, openAtEnd: 1, lostTurns: []int64{2}}},
		{"a nudge nobody answered, then another nudge", new(history).system().nudge().nudge().final(),
			turnCount{completed: 1, lost: 1, lostTurns: []int64{1}}},
		{"an empty broadcast does not supersede", new(history).system().nudge().call(true).
			prompt(memoryv1.Source_SOURCE_BROADCAST, "  ").final(),
			turnCount{completed: 1, lost: 1, lostTurns: []int64{1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := countTurns(tc.h.ms)
			if got.completed != tc.want.completed || got.superseded != tc.want.superseded || got.lost != tc.want.lost ||
				got.openAtEnd != tc.want.openAtEnd || !slices.Equal(got.lostTurns, tc.want.lostTurns) {
				t.Errorf("countTurns = %+v, want %+v", got, tc.want)
			}
		})
	}
}
