package openai

import (
	"context"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

// OpenAI's own reply shape: cached prompt tokens under prompt_tokens_details, reasoning under
// completion_tokens_details.
const openAIUsageReply = `{"id":"chatcmpl-B9","object":"chat.completion","created":1763776800,"model":"gpt-4o-mini-2024-07-18",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"Docked.","refusal":null},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,` +
	`"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},` +
	`"completion_tokens_details":{"reasoning_tokens":128,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},` +
	`"system_fingerprint":"fp_44709d6fcb"}`

func TestUsageWithCachedAndReasoningTokens(t *testing.T) {
	f := newFakeServer(t, reply{status: 503, body: `{"error":{"message":"overloaded","type":"server_error"}}`}, reply{body: openAIUsageReply})
	p := llm.WithRetry(f.provider(t, Config{}), llm.RetryOptions{Sleep: noSleep})
	resp, err := p.Chat(t.Context(), llm.Request{Model: "gpt-4o-mini", Messages: conversation()})
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Usage{PromptTokens: 2006, CachedPromptTokens: 1920, CompletionTokens: 300, ReasoningTokens: 128}
	if resp.Usage != want || resp.Retries != 1 {
		t.Fatalf("usage %+v retries %d, want %+v and 1 retry", resp.Usage, resp.Retries, want)
	}
}

func noSleep(context.Context, time.Duration) error { return nil }
