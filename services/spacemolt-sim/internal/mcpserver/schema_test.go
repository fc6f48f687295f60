package mcpserver

import (
	"encoding/json"
	"testing"
)

// A tool's schema lists its parameters in declared order then session_id, names the required ones and leaves
// additionalProperties open (unknown parameters reach the handler, which answers invalid_payload).
func TestInputSchema(t *testing.T) {
	got, err := json.Marshal(inputSchema([]param{
		{name: "target", typ: tString, desc: "Where to go.", required: true},
		{name: "mode", typ: tString, desc: "How.", enum: []string{"fast", "safe"}},
		{name: "count", typ: tInteger, desc: "How many."},
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{` +
		`"target":{"type":"string","description":"Where to go."},` +
		`"mode":{"type":"string","description":"How.","enum":["fast","safe"]},` +
		`"count":{"type":"integer","description":"How many."},` +
		`"session_id":{"type":"string","description":"Game session id from login/register. Optional: the login is also bound to your MCP session."}},` +
		`"required":["target"]}`
	if string(got) != want {
		t.Fatalf("schema\n got %s\nwant %s", got, want)
	}
}
