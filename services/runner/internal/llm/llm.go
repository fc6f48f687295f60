// Package llm is the runner's port to language models: one small interface that the ollama, openai and autopilot
// adapters implement, plus the cross-cutting wrappers (Retry-After aware retries, a per-provider concurrency limit)
// written once instead of per adapter.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/redact"
)

// Tool describes one callable tool to the model.
type Tool struct {
	Name        string
	Description string
	// Parameters is the tool's input JSON schema (an object schema).
	Parameters json.RawMessage
	// ReadOnly reports that running the tool changes nothing (a game read, a memory search), so a call whose result
	// was lost in a crash may simply be run again. It is not sent to the model.
	ReadOnly bool
	// ReadOnlyActions, for an action-dispatched tool (SpaceMolt's MCP v2: an "action" argument selects the command,
	// spacemolt action=get_status reads, action=travel moves the ship), are the actions whose calls change nothing,
	// when the tool as a whole is not ReadOnly. Not sent to the model.
	ReadOnlyActions []string
}

// ActionArg is the argument that selects an action-dispatched tool's command.
const ActionArg = "action"

// ActionOf returns the action a call's JSON arguments select ("" when there is none or it is not a string).
func ActionOf(arguments string) string {
	var args map[string]json.RawMessage
	if json.Unmarshal([]byte(arguments), &args) != nil {
		return ""
	}
	var action string
	if json.Unmarshal(args[ActionArg], &action) != nil {
		return ""
	}
	return action
}

// ReadOnlyCalls indexes which calls of tools change nothing: a ReadOnly tool by its name ("get_status",
// "spacemolt_catalog"), a read action of an action-dispatched tool as "tool.action" ("spacemolt.get_status").
// ReadOnlyCall looks a call up in it.
func ReadOnlyCalls(tools []Tool) map[string]bool {
	out := map[string]bool{}
	for _, t := range tools {
		if t.ReadOnly {
			out[t.Name] = true
		}
		for _, a := range t.ReadOnlyActions {
			out[t.Name+"."+a] = true
		}
	}
	return out
}

// ReadOnlyCall reports whether a call of tool name with these JSON arguments changes nothing, judged by the tool
// and, for an action-dispatched tool, by its action (see ReadOnlyCalls).
func ReadOnlyCall(reads map[string]bool, name, arguments string) bool {
	if reads[name] {
		return true
	}
	a := ActionOf(arguments)
	return a != "" && reads[name+"."+a]
}

// Request is one chat completion request.
type Request struct {
	Model       string
	Temperature float64
	Messages    []chat.Message
	Tools       []Tool
}

// Usage counts tokens as the provider reported them (zero when it did not).
type Usage struct {
	// PromptTokens counts the whole prompt, cached tokens included.
	PromptTokens int
	// CachedPromptTokens is the part of the prompt served from the provider's cache (OpenAI
	// prompt_tokens_details.cached_tokens); 0 when the provider does not say.
	CachedPromptTokens int
	// CompletionTokens counts the reply, reasoning included.
	CompletionTokens int
	// ReasoningTokens is the part of the completion spent reasoning, when the provider reports it.
	ReasoningTokens int
}

// Response is the model's reply.
type Response struct {
	// Message is the assistant message: content and/or tool calls (ids always set; adapters invent stable ids
	// when the provider sends none).
	Message chat.Message
	// Reasoning is the model's thinking, stored with the memory and searchable, never sent back to the model.
	Reasoning string
	Usage     Usage
	// Retries is how many failed attempts WithRetry made before this answer (0 without WithRetry).
	Retries int
}

// Provider is a language model backend.
type Provider interface {
	// Name is the provider's registry name ("ollama", "openai", "autopilot").
	Name() string
	// Chat sends one request. Errors that are worth retrying are *StatusError with Retryable() true.
	Chat(ctx context.Context, req Request) (Response, error)
}

// StatusError is an HTTP-level failure of a provider call.
type StatusError struct {
	Provider   string
	StatusCode int
	// RetryAfter is the server's Retry-After, zero when absent.
	RetryAfter time.Duration
	// Message is what the server said, redacted by the adapter that built the error (it knows its keys).
	Message string
}

// Error is the failure as logs, state reasons and call records show it. The message is the server's text, and
// servers echo credentials (a 401 that quotes "Bearer <key>"), so it is shown with the secret shapes redacted
// again, whichever adapter or test built the error.
func (e *StatusError) Error() string {
	return fmt.Sprintf("%s: HTTP %d: %s", e.Provider, e.StatusCode, redact.Shapes(e.Message))
}

// ReplyTooLargeError is a reply that passed the byte limit the runner reads of one (ZOEA_LLM_MAX_REPLY_BYTES): the
// adapter stopped reading it, decoded nothing, and the call fails. It is not retryable: a provider that sent 2 GB
// for a request will most likely do it again for the same request, and each attempt would read the limit again.
// The mysis goes errored with this as its reason and is retried after its backoff, when its request has changed
// or the provider has recovered.
type ReplyTooLargeError struct {
	Provider string
	Limit    int64
}

func (e *ReplyTooLargeError) Error() string {
	return fmt.Sprintf("%s: the reply was larger than %s, the most the runner reads of one (ZOEA_LLM_MAX_REPLY_BYTES); the rest was not read",
		e.Provider, byteSize(e.Limit))
}

// byteSize is n as a reader would say it: 8 MiB, 1.5 MiB, 640 KiB, 900 bytes.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', -1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', -1, 64) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// Retryable reports whether the same request may succeed later (rate limits and server errors).
func (e *StatusError) Retryable() bool {
	return e.StatusCode == 429 || e.StatusCode == 408 || e.StatusCode >= 500
}

// IsRetryable reports whether err is worth retrying.
func IsRetryable(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Retryable()
}

// RetriedError is a failure after retries: Error and Unwrap are the last attempt's, Retries says how many attempts
// failed before it. WithRetry returns it whenever it retried at least once.
type RetriedError struct {
	Retries int
	Err     error
}

func (e *RetriedError) Error() string { return e.Err.Error() }

func (e *RetriedError) Unwrap() error { return e.Err }

// RetriesOf returns how many retries an error from a WithRetry provider went through (0 when none).
func RetriesOf(err error) int {
	var re *RetriedError
	if errors.As(err, &re) {
		return re.Retries
	}
	return 0
}
