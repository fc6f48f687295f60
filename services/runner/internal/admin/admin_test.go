package admin

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/errs"
)

func TestDefaultPromptNeverAsksForCredentials(t *testing.T) {
	p := strings.ToLower(DefaultSystemPrompt)
	for _, want := range []string{"zoea_search_messages", "zoea_search_reasoning", "zoea_search_broadcasts", "captains_log_add", "never ask for"} {
		if !strings.Contains(p, want) {
			t.Errorf("system prompt lacks %q", want)
		}
	}
	if strings.Contains(p, "password:") {
		t.Error("system prompt carries a password")
	}
}

var rules = Rules{Providers: []string{Autopilot, "ollama", "openai"}, Models: map[string]string{"ollama": "qwen3:8b"}}.WithDefaults()

func str(s string) *string { return &s }

// fieldOf is the field an InvalidArgument names ("" for any other error).
func fieldOf(err error) string {
	var e *errs.Error
	if errors.As(err, &e) && e.Kind == errs.Invalid {
		return e.Field
	}
	return ""
}

// A create takes the defaults for what it leaves out and is refused, naming the field, for what breaks a rule.
func TestNewMysisDefaultsAndRules(t *testing.T) {
	ctx := context.Background()
	m, err := rules.NewMysis(ctx, Create{Name: "scout-1"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Provider != Autopilot || m.Model != "" || m.Temperature != DefaultTemperature || m.SystemPrompt != DefaultSystemPrompt {
		t.Fatalf("defaults: %+v", m)
	}
	zero := 0.0
	m, err = rules.NewMysis(ctx, Create{Name: "miner", Provider: "ollama", Temperature: &zero, SystemPrompt: "  ", SpaceMoltEndpoint: "v2"})
	if err != nil || m.Model != "qwen3:8b" || m.Temperature != 0 || m.SystemPrompt != DefaultSystemPrompt || m.SpaceMoltEndpoint != "v2" {
		t.Fatalf("ollama with temperature 0 and a blank prompt: %+v, %v", m, err)
	}
	hot := 2.5
	for _, c := range []struct {
		create Create
		field  string
	}{
		{Create{Name: " scout"}, "name"},
		{Create{Name: "a", Provider: "anthropic"}, "provider"},
		{Create{Name: "a", Provider: "openai"}, "model"}, // no default model for openai here
		{Create{Name: "a", Temperature: &hot}, "temperature"},
		{Create{Name: "a", SpaceMoltEndpoint: "v3"}, "spacemolt_endpoint"},
		{Create{Name: "a", Model: strings.Repeat("m", 10_000)}, "model"},
	} {
		if _, err := rules.NewMysis(ctx, c.create); fieldOf(err) != c.field {
			t.Errorf("%+v: %v, want InvalidArgument on %s", c.create, err, c.field)
		}
	}
	refused := errors.New("not reachable")
	r := rules
	r.Serves = func(_ context.Context, provider, _ string) error {
		if provider == "ollama" {
			return refused
		}
		return nil
	}
	if _, err := r.NewMysis(ctx, Create{Name: "a", Provider: "ollama"}); !errors.Is(err, refused) {
		t.Fatalf("a provider that cannot serve: %v", err)
	}
}

// A configure keeps what it leaves out, gives a new provider its default model, and checks what the mysis ends with.
func TestChangeRules(t *testing.T) {
	ctx := context.Background()
	ch, err := rules.Change(ctx, Current{Provider: Autopilot}, Configure{Provider: str("ollama")})
	if err != nil || ch.Model == nil || *ch.Model != "qwen3:8b" {
		t.Fatalf("to ollama: %+v, %v (want its default model)", ch, err)
	}
	if ch, err = rules.Change(ctx, Current{Provider: "ollama", Model: "qwen3:8b"}, Configure{Provider: str("ollama")}); err != nil || ch.Model != nil {
		t.Fatalf("the same provider again: %+v, %v (want the model left alone)", ch, err)
	}
	for _, c := range []struct {
		cfg   Configure
		field string
	}{
		{Configure{Model: str(" ")}, "model"},
		{Configure{SystemPrompt: str("")}, "system_prompt"},
		{Configure{Provider: str("openai")}, "model"}, // openai has no default model and none is named
		{Configure{SpaceMoltEndpoint: str("/mcp")}, "spacemolt_endpoint"},
		{Configure{Provider: str("x")}, "provider"},
	} {
		if _, err := rules.Change(ctx, Current{Provider: Autopilot}, c.cfg); fieldOf(err) != c.field {
			t.Errorf("%+v: %v, want InvalidArgument on %s", c.cfg, err, c.field)
		}
	}
}

func TestRefsReasonsAndPages(t *testing.T) {
	if r, err := ParseRef("mysis", "0B8C7D2E-1F3A-4B5C-9D6E-7F8091A2B3C4"); err != nil || r.ID != "0b8c7d2e-1f3a-4b5c-9d6e-7f8091a2b3c4" || r.Name != "" {
		t.Fatalf("an upper-case id: %+v, %v", r, err)
	}
	if r, err := ParseRef("myses[2]", "scout-1"); err != nil || r.Name != "scout-1" {
		t.Fatalf("a name: %+v, %v", r, err)
	}
	for _, ref := range []string{"", " scout"} {
		if _, err := ParseRef("myses[2]", ref); fieldOf(err) != "myses[2]" {
			t.Errorf("%q: %v, want InvalidArgument on myses[2]", ref, err)
		}
	}
	if StopReason("  ") != StoppedByCommander || StopReason(" done ") != "done" {
		t.Fatalf("stop reasons: %q, %q", StopReason("  "), StopReason(" done "))
	}
	for n, want := range map[int32]int32{0: 100, 1: 1, 1000: 1000} {
		if got, err := PageSize(n); err != nil || got != want {
			t.Errorf("PageSize(%d) = %d, %v; want %d", n, got, err, want)
		}
	}
	for _, n := range []int32{-1, 1001} {
		if _, err := PageSize(n); fieldOf(err) != "page_size" {
			t.Errorf("PageSize(%d): %v, want InvalidArgument on page_size", n, err)
		}
	}
}
