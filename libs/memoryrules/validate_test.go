package memoryrules_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/memoryrules"
)

func TestCheckText(t *testing.T) {
	cases := []struct {
		in string
		ok bool
	}{
		{"", true},
		{"plain | with : separators \"quotes\" and 'single'", true},
		{"ünïcødé 🚀 日本語", true},
		{"tab\tnewline\nreturn\r", true},
		{"nul\x00byte", false},
		{"\xff\xfe invalid utf8", false},
		{"truncated \xe2\x82", false},
	}
	for _, c := range cases {
		err := memoryrules.CheckText("content", c.in, 1<<20)
		if (err == nil) != c.ok {
			t.Errorf("CheckText(%q) = %v, want ok=%v", c.in, err, c.ok)
		}
		if err != nil && (errs.KindOf(err) != errs.Invalid || errs.FieldOf(err) != "content") {
			t.Errorf("CheckText(%q): kind %v field %q", c.in, errs.KindOf(err), errs.FieldOf(err))
		}
	}
	if err := memoryrules.CheckText("content", strings.Repeat("x", 11), 10); err == nil {
		t.Error("over the limit accepted")
	}
}

func TestParseID(t *testing.T) {
	id := uuid.Must(uuid.NewV7()).String()
	if got, err := memoryrules.ParseID("mysis_id", strings.ToUpper(id)); err != nil || got != id {
		t.Fatalf("upper-case uuid: %q %v", got, err)
	}
	for _, bad := range []string{"", "x", "0195d8a00000700080000000000000000", "{0195d8a0-0000-7000-8000-000000000000}", "urn:uuid:0195d8a0-0000-7000-8000-000000000000"} {
		if _, err := memoryrules.ParseID("mysis_id", bad); errs.FieldOf(err) != "mysis_id" {
			t.Errorf("ParseID(%q) = %v", bad, err)
		}
	}
}

func TestLimit(t *testing.T) {
	for _, c := range []struct{ in, want int }{{0, 20}, {1, 1}, {100, 100}, {101, 100}, {1 << 30, 100}} {
		if got, err := memoryrules.Limit("limit", c.in, 20, 100); err != nil || got != c.want {
			t.Errorf("Limit(%d) = %d %v, want %d", c.in, got, err, c.want)
		}
	}
	if _, err := memoryrules.Limit("limit", -1, 20, 100); errs.FieldOf(err) != "limit" {
		t.Errorf("negative: %v", err)
	}
}

func TestIsJSONObject(t *testing.T) {
	for in, want := range map[string]bool{
		`{}`: true, ` { "a" : [1, {"b": null}] } `: true, `{"a":"x|y:z"}`: true,
		`[]`: false, `"s"`: false, `1`: false, ``: false, `{`: false, `{} {}`: false, `null`: false,
	} {
		if got := memoryrules.IsJSONObject(in); got != want {
			t.Errorf("IsJSONObject(%q) = %v", in, got)
		}
	}
}

func TestValidateNewMemoriesFieldPaths(t *testing.T) {
	ok := memoryrules.NewMemory{Role: memoryrules.RoleUser, Source: memoryrules.SourceDirect, Content: "x"}
	cases := []struct {
		name  string
		batch []memoryrules.NewMemory
		field string
	}{
		{"empty", nil, "memories"},
		{"too many", make([]memoryrules.NewMemory, memoryrules.MaxBatch+1), "memories"},
		{"content", []memoryrules.NewMemory{ok, ok, ok, {Role: memoryrules.RoleUser, Source: memoryrules.SourceDirect, Content: "\x00"}}, "memories[3].content"},
		{"sender", []memoryrules.NewMemory{{Role: memoryrules.RoleUser, Source: memoryrules.SourceDirect, SenderID: "\xff"}}, "memories[0].sender_id"},
		{"call name", []memoryrules.NewMemory{{Role: memoryrules.RoleAssistant, Source: memoryrules.SourceLLM, ToolCalls: []memoryrules.ToolCall{{ID: "a", Arguments: "{}"}}}}, "memories[0].tool_calls[0].name"},
		{"call id", []memoryrules.NewMemory{{Role: memoryrules.RoleAssistant, Source: memoryrules.SourceLLM, ToolCalls: []memoryrules.ToolCall{{Name: "a", Arguments: "{}"}}}}, "memories[0].tool_calls[0].id"},
		{"call args", []memoryrules.NewMemory{ok, {Role: memoryrules.RoleAssistant, Source: memoryrules.SourceLLM, ToolCalls: []memoryrules.ToolCall{{ID: "1", Name: "a", Arguments: "{}"}, {ID: "2", Name: "b", Arguments: "x"}}}}, "memories[1].tool_calls[1].arguments_json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := memoryrules.ValidateNewMemories(c.batch)
			if errs.KindOf(err) != errs.Invalid || errs.FieldOf(err) != c.field {
				t.Fatalf("got %v (field %q), want field %q", err, errs.FieldOf(err), c.field)
			}
		})
	}
	if err := memoryrules.ValidateNewMemories([]memoryrules.NewMemory{ok, {Role: memoryrules.RoleTool, Source: memoryrules.SourceTool, ToolCallID: "c"}}); err != nil {
		t.Fatal(err)
	}
}

// The provider is an opaque identifier here: which providers exist and which need a model is the runner's rule.
func TestProviderIsAnOpaqueIdentifier(t *testing.T) {
	base := memoryrules.NewMysis{SystemPrompt: "You are a mysis.", Name: "m"}
	for _, p := range []string{"autopilot", "ollama", "openai", "vllm", "my-gateway.v2", "a_b", strings.Repeat("x", memoryrules.MaxProviderBytes)} {
		m := base
		m.Provider = p // no model: whether one is needed is not memory's question
		if err := memoryrules.ValidateNewMysis(m); err != nil {
			t.Errorf("provider %q: %v", p, err)
		}
	}
	for _, p := range []string{"", "OpenAI", "open ai", "-x", ".x", "_x", "x/y", "ollama\x00", "é", strings.Repeat("x", memoryrules.MaxProviderBytes+1)} {
		m := base
		m.Provider = p
		if err := memoryrules.ValidateNewMysis(m); errs.FieldOf(err) != "provider" || errs.KindOf(err) != errs.Invalid {
			t.Errorf("provider %q: %v, want Invalid naming provider", p, err)
		}
	}
}

func FuzzValidateNewMemory(f *testing.F) {
	f.Add("content", "reasoning", `{"a":1}`, "id", int16(3), int16(4))
	f.Add("\x00", "", "[]", "", int16(0), int16(9))
	f.Fuzz(func(t *testing.T, content, reasoning, args, callID string, role, source int16) {
		m := memoryrules.NewMemory{Role: memoryrules.Role(role), Source: memoryrules.Source(source), Content: content, Reasoning: reasoning}
		if memoryrules.Role(role) == memoryrules.RoleAssistant {
			m.ToolCalls = []memoryrules.ToolCall{{ID: callID, Name: "t", Arguments: args}}
		}
		err := memoryrules.ValidateNewMemory("memories[0]", m)
		if err != nil {
			if errs.KindOf(err) != errs.Invalid || !strings.HasPrefix(errs.FieldOf(err), "memories[0]") {
				t.Fatalf("error without a field path: %v", err)
			}
			return
		}
		// Whatever passes must be storable text.
		for _, s := range []string{content, reasoning} {
			if strings.ContainsRune(s, 0) {
				t.Fatal("NUL accepted")
			}
		}
	})
}

// A prompt the composer could never use is refused at create and configure time, with the reason.
func TestSystemPromptBounds(t *testing.T) {
	base := memoryrules.NewMysis{Name: "p", Provider: "autopilot"}
	for prompt, want := range map[string]string{
		"":                         "required",
		" \n\t":                    "required",
		strings.Repeat("x", 1<<20): "too long",
		strings.Repeat("x", memoryrules.MaxSystemPromptBytes+1): "too long",
	} {
		m := base
		m.SystemPrompt = prompt
		err := memoryrules.ValidateNewMysis(m)
		if errs.FieldOf(err) != "system_prompt" || !strings.Contains(err.Error(), want) {
			t.Errorf("prompt of %d bytes: %v, want system_prompt %s", len(prompt), err, want)
		}
	}
	m := base
	m.SystemPrompt = strings.Repeat("x", memoryrules.MaxSystemPromptBytes)
	if err := memoryrules.ValidateNewMysis(m); err != nil {
		t.Errorf("a prompt at the limit: %v", err)
	}
}
