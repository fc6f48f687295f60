package memory_test

import (
	"testing"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// The request rules themselves are tested in libs/memoryrules; these are the domain's own.

func TestOpensTurnAndMission(t *testing.T) {
	for _, c := range []struct {
		r      memory.Role
		s      memory.Source
		sender string
		opens  bool
		miss   bool
	}{
		{memory.RoleUser, memory.SourceDirect, "", true, true},
		{memory.RoleUser, memory.SourceBroadcast, "", true, true},
		{memory.RoleUser, memory.SourceBroadcast, "some-mysis", true, false},
		{memory.RoleUser, memory.SourceDirect, "some-mysis", true, false},
		{memory.RoleUser, memory.SourceNudge, "", true, false},
		{memory.RoleUser, memory.SourceSystem, "", false, false},
		{memory.RoleSystem, memory.SourceSystem, "", false, false},
		{memory.RoleAssistant, memory.SourceLLM, "", false, false},
		{memory.RoleTool, memory.SourceTool, "", false, false},
	} {
		if got := memory.OpensTurn(c.r, c.s); got != c.opens {
			t.Errorf("OpensTurn(%v,%v) = %v", c.r, c.s, got)
		}
		if got := memory.IsCommanderMission(c.r, c.s, c.sender); got != c.miss {
			t.Errorf("IsCommanderMission(%v,%v,%q) = %v", c.r, c.s, c.sender, got)
		}
	}
}

func TestConfigPatchValidatesTheResult(t *testing.T) {
	base := memory.NewMysis{SystemPrompt: "You are a mysis.", Name: "m", Provider: "autopilot"}
	bad := "Open AI"
	if _, err := (memory.ConfigPatch{Provider: &bad}).Apply(base); errs.FieldOf(err) != "provider" {
		t.Fatalf("switching to a malformed provider: %v", err)
	}
	openai, model := "openai", "gpt-4o-mini"
	got, err := memory.ConfigPatch{Provider: &openai, Model: &model}.Apply(base)
	if err != nil || got.Provider != openai || got.Model != model || got.Name != "m" {
		t.Fatalf("%+v %v", got, err)
	}
}

func TestConfigPatchToAnEmptyPrompt(t *testing.T) {
	empty := ""
	if _, err := (memory.ConfigPatch{SystemPrompt: &empty}).Apply(memory.NewMysis{Name: "p", Provider: "autopilot", SystemPrompt: "ok"}); errs.FieldOf(err) != "system_prompt" {
		t.Errorf("configure to an empty prompt: %v", err)
	}
}
