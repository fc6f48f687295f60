package app

import "testing"

func TestSpaceMoltEndpointURL(t *testing.T) {
	for _, c := range []struct{ url, endpoint, want string }{
		{"http://127.0.0.1:7100/mcp", "", "http://127.0.0.1:7100/mcp"},
		{"http://127.0.0.1:7100/mcp", "v2", "http://127.0.0.1:7100/mcp/v2"},
		{"http://127.0.0.1:7100/mcp/v2", "v1", "http://127.0.0.1:7100/mcp"},
		{"https://game.spacemolt.com/mcp/", "v2", "https://game.spacemolt.com/mcp/v2"},
		{"http://sim:7100", "v2", "http://sim:7100/mcp/v2"},
	} {
		got, err := SpaceMoltEndpointURL(c.url, c.endpoint)
		if err != nil || got != c.want {
			t.Errorf("SpaceMoltEndpointURL(%q, %q) = %q, %v; want %q", c.url, c.endpoint, got, err, c.want)
		}
	}
	if _, err := SpaceMoltEndpointURL("http://x/mcp", "v3"); err == nil {
		t.Error("endpoint v3 accepted")
	}
}
