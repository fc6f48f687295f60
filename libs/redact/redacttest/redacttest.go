// Package redacttest is the table of ways a credential comes back from a provider, a proxy or a game server, for
// the tests of every exit that must keep it out (errors, logs, state reasons, stored calls, CLI and console
// output). One table, so every exit is tested against the same echoes.
package redacttest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Echo is one text that carries a secret.
type Echo struct {
	Name string
	Text string
	// Bare marks an echo with no recognisable shape around the secret: only a redactor that knows the value can
	// find it (a CLI, which knows no provider key, relies on the runner having removed it).
	Bare bool
}

// Echoes returns every echo shape carrying secret.
func Echoes(secret string) []Echo {
	quoted, _ := json.Marshal(`{"error":{"message":"invalid","api_key":"` + secret + `"}}`)
	return []Echo{
		{Name: "bearer header", Text: "Incorrect API key provided: Bearer " + secret + ". You can find your API key at https://platform.openai.com/account/api-keys."},
		{Name: "authorization header", Text: "upstream rejected the request (Authorization: Bearer " + secret + ")"},
		{Name: "json field", Text: `{"error":{"message":"invalid key","type":"invalid_request_error","api_key":"` + secret + `"}}`},
		{Name: "json field in a string", Text: "proxy said " + string(quoted)},
		{Name: "json password", Text: `{"username":"scout","password":"` + secret + `"}`},
		{Name: "url query", Text: `Post "https://llm.example/v1/chat/completions?key=` + secret + `&alt=json": dial tcp: connection refused`},
		{Name: "url query api_key", Text: "GET /v1/models?api_key=" + secret + " 401"},
		{Name: "url user info", Text: "dial nats://runner:" + secret + "@nats.internal:4222: refused"},
		{Name: "bare key", Text: "Incorrect API key provided: " + secret + ".", Bare: true},
		{Name: "wrapped twice", Text: fmt.Errorf("llm openai: %w", fmt.Errorf("openai: HTTP 401: %w", fmt.Errorf("invalid key %s", secret))).Error(), Bare: true},
		// Cut at 500 bytes (a state reason) or 1000 (a call's error), a secret that straddles the cut would survive
		// in part, where no rule recognises it: redaction must come before the cut.
		{Name: "straddles a cut", Text: strings.Repeat("x", 490) + " " + secret + " " + strings.Repeat("y", 600), Bare: true},
	}
}

// Leak returns the first 10 consecutive bytes of secret found in text ("" when none): a cut secret is a leak too.
func Leak(text, secret string) string {
	for i := 0; i+10 <= len(secret); i++ {
		if strings.Contains(text, secret[i:i+10]) {
			return secret[i : i+10]
		}
	}
	return ""
}
