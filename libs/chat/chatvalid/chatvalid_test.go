package chatvalid

import (
	"errors"
	"slices"
	"testing"

	"github.com/zoeaswarm/zoea/libs/chat"
)

func sys(s string) chat.Message  { return chat.Message{Role: chat.RoleSystem, Content: s} }
func user(s string) chat.Message { return chat.Message{Role: chat.RoleUser, Content: s} }
func asst(s string) chat.Message { return chat.Message{Role: chat.RoleAssistant, Content: s} }
func calls(ids ...string) chat.Message {
	m := chat.Message{Role: chat.RoleAssistant}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: id, Name: "get_status", Arguments: "{}"})
	}
	return m
}
func result(id string) chat.Message {
	return chat.Message{Role: chat.RoleTool, ToolCallID: id, Name: "get_status", Content: "ok"}
}

func TestValidate(t *testing.T) {
	type want struct {
		index int
		rule  Rule
	}
	tests := []struct {
		name     string
		msgs     []chat.Message
		provider Provider
		want     []want // empty: valid
	}{
		{"minimal", []chat.Message{sys("s"), user("hi")}, Strict, nil},
		{"no system is fine", []chat.Message{user("hi"), asst("hello")}, Strict, nil},
		{"full loop", []chat.Message{sys("s"), user("go"), calls("a", "b"), result("b"), result("a"), asst("done")}, Strict, nil},
		{"results then user text merge", []chat.Message{sys("s"), user("go"), calls("a"), result("a"), user("next")}, Strict, nil},
		{"empty", nil, Strict, []want{{-1, RuleEmptyConversation}}},
		{"system only", []chat.Message{sys("s")}, Strict, []want{{-1, RuleEmptyConversation}}},
		{"second system", []chat.Message{sys("s"), user("u"), sys("again")}, Strict, []want{{2, RuleSystemNotFirst}}},
		{"system not first", []chat.Message{user("u"), sys("s")}, Strict, []want{{1, RuleSystemNotFirst}}},
		{"assistant first openai", []chat.Message{sys("s"), asst("a"), user("u")}, OpenAI, []want{{1, RuleAssistantBeforeUser}}},
		{"assistant first anthropic", []chat.Message{sys("s"), asst("a"), user("u")}, Anthropic, []want{{1, RuleFirstNotUser}}},
		{"assistant first strict", []chat.Message{sys("s"), asst("a"), user("u")}, Strict, []want{{1, RuleFirstNotUser}, {1, RuleAssistantBeforeUser}}},
		{"missing result", []chat.Message{user("u"), calls("a", "b"), result("a"), user("x")}, Strict, []want{{1, RuleMissingToolResult}}},
		{"missing result at end", []chat.Message{user("u"), calls("a")}, Strict, []want{{1, RuleMissingToolResult}}},
		{"result after user", []chat.Message{user("u"), calls("a"), user("x"), result("a")}, Strict,
			[]want{{1, RuleMissingToolResult}, {3, RuleOrphanToolResult}, {3, RuleConsecutiveRole}}},
		{"orphan", []chat.Message{user("u"), result("a")}, Strict, []want{{1, RuleOrphanToolResult}, {1, RuleConsecutiveRole}}},
		{"wrong id", []chat.Message{user("u"), calls("a"), result("b")}, Strict, []want{{1, RuleMissingToolResult}, {2, RuleOrphanToolResult}}},
		{"duplicate result", []chat.Message{user("u"), calls("a"), result("a"), result("a")}, Strict, []want{{3, RuleDuplicateToolResult}}},
		{"duplicate id across messages", []chat.Message{user("u"), calls("a"), result("a"), calls("a"), result("a")}, Strict, []want{{3, RuleDuplicateToolCallID}}},
		{"empty ids and names", []chat.Message{user("u"),
			{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "", Name: "", Arguments: "{}"}}},
			{Role: chat.RoleTool, ToolCallID: "", Content: "x"}}, Strict,
			[]want{{1, RuleEmptyToolCallID}, {1, RuleEmptyToolName}, {2, RuleEmptyToolCallID}}},
		{"bad arguments", []chat.Message{user("u"),
			{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "a", Name: "n", Arguments: ""}, {ID: "b", Name: "n", Arguments: "[1]"}, {ID: "c", Name: "n", Arguments: "{\"a\":"}, {ID: "d", Name: "n", Arguments: ` {"x":"|:"} `}}},
			result("a"), result("b"), result("c"), result("d")}, Strict,
			[]want{{1, RuleBadArguments}, {1, RuleBadArguments}, {1, RuleBadArguments}}},
		{"empty assistant", []chat.Message{user("u"), asst("")}, Strict, []want{{1, RuleEmptyAssistant}}},
		{"blank assistant openai ok", []chat.Message{user("u"), asst("  ")}, OpenAI, nil},
		{"blank assistant anthropic", []chat.Message{user("u"), asst("  ")}, Anthropic, []want{{1, RuleBlankText}}},
		{"empty user", []chat.Message{user("")}, Strict, []want{{0, RuleEmptyUser}}},
		{"blank user", []chat.Message{user("\n ")}, Strict, []want{{0, RuleBlankText}}},
		{"user user openai ok", []chat.Message{user("a"), user("b")}, OpenAI, nil},
		{"user user anthropic", []chat.Message{user("a"), user("b")}, Anthropic, []want{{1, RuleConsecutiveRole}}},
		{"assistant assistant", []chat.Message{user("a"), asst("b"), asst("c")}, Strict, []want{{2, RuleConsecutiveRole}}},
		{"unknown role", []chat.Message{user("a"), {Role: "developer", Content: "x"}}, Strict, []want{{1, RuleUnknownRole}}},
		{"misplaced fields", []chat.Message{{Role: chat.RoleUser, Content: "a", ToolCallID: "x", Name: "n"}}, Strict,
			[]want{{0, RuleMisplacedField}, {0, RuleMisplacedField}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.provider.Validate(tt.msgs)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var verr *Error
			if !errors.As(err, &verr) {
				t.Fatalf("want *Error, got %v", err)
			}
			var got []want
			for _, v := range verr.Violations {
				got = append(got, want{v.Index, v.Rule})
			}
			sortWants := func(w []want) {
				slices.SortFunc(w, func(a, b want) int {
					if a.index != b.index {
						return a.index - b.index
					}
					if a.rule < b.rule {
						return -1
					}
					if a.rule > b.rule {
						return 1
					}
					return 0
				})
			}
			exp := slices.Clone(tt.want)
			sortWants(got)
			sortWants(exp)
			if !slices.Equal(got, exp) {
				t.Fatalf("violations\n got %v\nwant %v\nerr: %v", got, exp, err)
			}
		})
	}
}

func TestValidateIsStrict(t *testing.T) {
	msgs := []chat.Message{user("a"), user("b")}
	if Validate(msgs) == nil {
		t.Fatal("Validate must apply Anthropic rules too")
	}
	err := Validate([]chat.Message{user("")})
	var verr *Error
	if !errors.As(err, &verr) || !verr.Has(RuleEmptyUser) || verr.Has(RuleOrphanToolResult) {
		t.Fatalf("Has: %v", err)
	}
}
