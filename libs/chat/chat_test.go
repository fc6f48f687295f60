package chat

import (
	"encoding/json"
	"testing"
)

func TestRoleValid(t *testing.T) {
	for _, r := range []Role{RoleSystem, RoleUser, RoleAssistant, RoleTool} {
		if !r.Valid() {
			t.Errorf("%q should be valid", r)
		}
	}
	for _, r := range []Role{"", "developer", "User"} {
		if r.Valid() {
			t.Errorf("%q should be invalid", r)
		}
	}
}

// Arguments must survive a JSON round trip byte for byte, including separators the old text encoding choked on.
func TestToolCallArgumentsRoundTrip(t *testing.T) {
	in := Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c|1:x", Name: "captains_log_add", Arguments: `{"text":"a|b:c \"q\" }{","n":1}`}}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Message
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.ToolCalls[0] != in.ToolCalls[0] {
		t.Fatalf("round trip changed the call: %+v", out.ToolCalls[0])
	}
}
