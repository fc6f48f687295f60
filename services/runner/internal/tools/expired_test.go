package tools

import (
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A session is expired when the SDK says so, however deeply wrapped; a text that merely mentions 404 (a game reply,
// a tool error naming a missing item) is not.
func TestSessionExpired(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{fmt.Errorf("calling \"get_status\": %w", fmt.Errorf("POST: failed to connect (session ID: x): %w", mcp.ErrSessionMissing)), true},
		{fmt.Errorf("%w: calling %q: %v", mcp.ErrConnectionClosed, "get_status", errors.New("session not found")), true},
		{errors.New("item 404 not found in cargo"), false},
		{errors.New("HTTP 404 from the game"), false},
	} {
		if got := sessionExpired(c.err); got != c.want {
			t.Errorf("sessionExpired(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
