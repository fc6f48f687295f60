package memoryrules

import (
	"fmt"

	"github.com/zoeaswarm/zoea/libs/errs"
)

// An idempotency key makes a retried append safe: the same key with the same content returns the row stored the
// first time. The same key with other content is not a retry but a mistake (or a second writer that lost a race),
// and returning the first row would silently drop what the caller meant to store (issue 41, finding 4), so it is
// refused with errs.ReasonIdempotencyKeyReused and nothing is written. The memory service and its fake compare with
// the functions below, so they agree.
//
// What is compared is what the caller chose: role, source, sender, content, reasoning, the tool calls (id, name and
// arguments, in order), the tool call id and tool name, and the call arguments when the request gives them (when it
// does not, the store derives them from the call, so they are not the caller's to repeat). The LLM call accounting
// that travels with an assistant memory is not compared: it is keyed by its own call_id, and a replica that raced
// for the same reply and got the same text paid for a call of its own, which is recorded either way.

// PayloadMismatch returns the first field ("content", "tool_calls[1].arguments", …) in which the request req
// differs from the memory stored under its idempotency key, or "" when req is a retry of it.
func PayloadMismatch(req, stored NewMemory) string {
	switch {
	case req.Role != stored.Role:
		return "role"
	case req.Source != stored.Source:
		return "source"
	case req.SenderID != stored.SenderID:
		return "sender_id"
	case req.Content != stored.Content:
		return "content"
	case req.Reasoning != stored.Reasoning:
		return "reasoning"
	case len(req.ToolCalls) != len(stored.ToolCalls):
		return "tool_calls"
	case req.ToolCallID != stored.ToolCallID:
		return "tool_call_id"
	case req.ToolName != stored.ToolName:
		return "tool_name"
	case req.CallArguments != "" && req.CallArguments != stored.CallArguments:
		return "call_arguments_json"
	}
	for i, c := range req.ToolCalls {
		s := stored.ToolCalls[i]
		switch {
		case c.ID != s.ID:
			return fmt.Sprintf("tool_calls[%d].id", i)
		case c.Name != s.Name:
			return fmt.Sprintf("tool_calls[%d].name", i)
		case c.Arguments != s.Arguments:
			return fmt.Sprintf("tool_calls[%d].arguments", i)
		}
	}
	return ""
}

// KeyReused is the error for memories[index] whose idempotency key names a stored memory that differs in field.
func KeyReused(index int, key, field string) error {
	return errs.KeyReusedf(fmt.Sprintf("memories[%d].idempotency_key", index),
		"%q already names a stored memory with a different %s; nothing was appended (use a new key for new content)", key, field)
}

// BroadcastMismatch returns the field ("content", "sender_id") in which a broadcast request differs from the
// broadcast stored under its id, or "" when it is a retry of it. The targets are not compared: delivering a
// recorded broadcast to more myses is what a retry, or DeliverBroadcast, may do.
func BroadcastMismatch(reqSender, reqContent, storedSender, storedContent string) string {
	switch {
	case reqContent != storedContent:
		return "content"
	case reqSender != storedSender:
		return "sender_id"
	}
	return ""
}

// BroadcastKeyReused is the error for a broadcast_id that names a recorded broadcast differing in field.
func BroadcastKeyReused(id, field string) error {
	return errs.KeyReusedf("broadcast_id", "%s already names a recorded broadcast with a different %s; nothing was recorded or delivered (use a new id for a new broadcast)", id, field)
}
