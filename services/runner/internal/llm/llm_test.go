package llm

import (
	"fmt"
	"testing"

	"github.com/zoeaswarm/zoea/libs/redact/redacttest"
)

// A StatusError built by any adapter (or a test provider) that copied a server's text unredacted still prints
// without the credential's recognisable shapes, wrapped or not.
func TestStatusErrorRedactsShapes(t *testing.T) {
	const key = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
	for _, e := range redacttest.Echoes(key) {
		err := fmt.Errorf("llm openai: %w", &StatusError{Provider: "openai", StatusCode: 401, Message: e.Text})
		if leak := redacttest.Leak(err.Error(), key); leak != "" {
			t.Errorf("%s: %v", e.Name, err)
		}
	}
}
