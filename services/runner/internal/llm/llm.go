// Package llm is the runner's port to language models: one small interface that the ollama, openai and autopilot
// adapters implement, plus the cross-cutting wrappers (Retry-After aware retries, a per-provider concurrency limit)
// written once instead of per adapter.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/zoeaswarm/zoea/libs/chat"
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
	PromptTokens     int
	CompletionTokens int
}

// Response is the model's reply.
type Response struct {
	// Message is the assistant message: content and/or tool calls (ids always set; adapters invent stable ids
	// when the provider sends none).
	Message chat.Message
	// Reasoning is the model's thinking, stored with the memory and searchable, never sent back to the model.
	Reasoning string
	Usage     Usage
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
	Message    string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s: HTTP %d: %s", e.Provider, e.StatusCode, e.Message)
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
