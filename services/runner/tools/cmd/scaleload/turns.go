package main

import (
	"strings"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
)

// turnCount is how a mysis's turns ended, read from its stored history.
//
// The rules are the runner's and the memory service's (DESIGN, "Turn boundary"; memory.OpensTurn; the runner's
// findResumePoint and the composer's encourage):
//   - a turn is opened by a user prompt — a direct message, a broadcast or a nudge — and every memory after it
//     carries its turn number until the next prompt;
//   - a turn ends with a final answer: an assistant message without tool calls;
//   - a turn without a final answer is resumed, not abandoned: the runner stores a nudge (opens an autonomous turn)
//     only when the newest memory is a final answer, and a turn cut by the iteration limit, a stop or a crash goes
//     on under the same turn number. The one legitimate way for a turn to end without its final answer is a real
//     prompt (a non-empty direct message or broadcast) opening the next turn: the runner answers the newest prompt.
//
// So an open turn followed by a nudge-opened turn was lost: the mysis went on playing without ever finishing it.
// The newest turn left open is open only because the run stopped.
type turnCount struct {
	completed, superseded, lost, openAtEnd int
	// lostTurns are the numbers of the lost turns (for the report).
	lostTurns []int64
}

func (c *turnCount) add(o turnCount) {
	c.completed += o.completed
	c.superseded += o.superseded
	c.lost += o.lost
	c.openAtEnd += o.openAtEnd
}

// opensTurn reports whether m is a prompt that opens a turn (memory.OpensTurn).
func opensTurn(m *memoryv1.Memory) bool {
	if m.GetRole() != memoryv1.Role_ROLE_USER {
		return false
	}
	switch m.GetSource() {
	case memoryv1.Source_SOURCE_DIRECT, memoryv1.Source_SOURCE_BROADCAST, memoryv1.Source_SOURCE_NUDGE:
		return true
	}
	return false
}

// realPrompt reports whether m is a prompt the runner acts on in place of an open turn (the composer's newestTurn).
func realPrompt(m *memoryv1.Memory) bool {
	return m.GetRole() == memoryv1.Role_ROLE_USER &&
		(m.GetSource() == memoryv1.Source_SOURCE_DIRECT || m.GetSource() == memoryv1.Source_SOURCE_BROADCAST) &&
		strings.TrimSpace(m.GetContent()) != ""
}

// countTurns classifies every prompt-opened turn of one mysis's history (all its memories, in seq order).
// Memories before the first prompt (the turn-0 rows) belong to no turn.
func countTurns(ms []*memoryv1.Memory) turnCount {
	type turn struct {
		number   int64
		opener   *memoryv1.Memory
		answered bool
	}
	var turns []*turn
	for _, m := range ms {
		if opensTurn(m) && (len(turns) == 0 || m.GetTurn() != turns[len(turns)-1].number) {
			turns = append(turns, &turn{number: m.GetTurn(), opener: m})
			continue
		}
		if len(turns) == 0 || m.GetTurn() != turns[len(turns)-1].number {
			continue // before the first prompt
		}
		if m.GetRole() == memoryv1.Role_ROLE_ASSISTANT && len(m.GetToolCalls()) == 0 {
			turns[len(turns)-1].answered = true
		}
	}
	var c turnCount
	for i, t := range turns {
		switch {
		case t.answered:
			c.completed++
		case i == len(turns)-1:
			c.openAtEnd++
		case realPrompt(turns[i+1].opener):
			c.superseded++
		default:
			c.lost++
			c.lostTurns = append(c.lostTurns, t.number)
		}
	}
	return c
}
