// Package admin holds the commander's rules for the swarm: what creating or configuring a mysis may ask and the
// defaults it gets (provider, model, temperature, prompt, SpaceMolt endpoint), how a mysis is named in a request, how
// large a page may be, and the reasons a start and a stop record. It is the runner's domain for the admin API: the
// SwarmService transport (grpcapi) converts a request into the values below, asks these rules for the change, and
// hands it to the memory service through its port. It imports no wire type, so the rules read the same from any
// transport.
package admin

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/memoryrules"
	"github.com/zoeaswarm/zoea/libs/names"
	"github.com/zoeaswarm/zoea/libs/text"
)

// Autopilot is the built-in provider that plays SpaceMolt without an LLM: the only one that runs without a model.
// Its name is written once, in libs/memoryrules, which the CLI and the test support share.
const Autopilot = memoryrules.AutopilotProvider

// The reasons a mysis's state records when the commander starts or stops it (a stop may give its own). The stop's
// is libs/memoryrules', which the CLI sends too.
const (
	StartedByCommander = "started by commander"
	StoppedByCommander = memoryrules.CommanderStopReason
)

// DefaultTemperature is a new mysis's temperature when neither the request nor the runner names one.
const DefaultTemperature = 0.7

// Rules are the runner's defaults and limits for creating and configuring myses.
type Rules struct {
	// Provider when a create names none (ZOEA_DEFAULT_PROVIDER; Autopilot when empty).
	Provider string
	// Models is the default model per provider.
	Models map[string]string
	// Temperature when a create names none (DefaultTemperature when 0).
	Temperature float64
	// SystemPrompt when a create's is empty (DefaultSystemPrompt when empty).
	SystemPrompt string
	// Providers are the names this runner can use; others are refused (none listed: any).
	Providers []string
	// Serves, when set, says whether a provider can serve a model now (reachable, key present, model known); create
	// and configure refuse what it refuses, so a mistake is reported to the commander instead of failing the turn.
	Serves func(ctx context.Context, provider, model string) error
}

// WithDefaults fills the rules' empty defaults.
func (r Rules) WithDefaults() Rules {
	if r.Temperature == 0 {
		r.Temperature = DefaultTemperature
	}
	if r.SystemPrompt == "" {
		r.SystemPrompt = DefaultSystemPrompt
	}
	if r.Provider == "" {
		r.Provider = Autopilot
	}
	return r
}

// Create is what a commander asks of a new mysis; empty strings and a nil temperature take the defaults.
type Create struct {
	Name, Provider, Model, SystemPrompt string
	Temperature                         *float64
	// SpaceMoltEndpoint is "v1", "v2" or "" for the swarm's.
	SpaceMoltEndpoint string
}

// NewMysis is a mysis to store, its defaults applied and every rule checked.
type NewMysis struct {
	Name, Provider, Model, SystemPrompt string
	Temperature                         float64
	SpaceMoltEndpoint                   string
}

// Configure is what a commander changes of a mysis; nil fields stay as they are.
type Configure struct {
	Provider, Model, SystemPrompt, SpaceMoltEndpoint *string
	Temperature                                      *float64
}

// ConfigChange is the change to store; nil fields stay as they are.
type ConfigChange struct {
	Provider, Model, SystemPrompt, SpaceMoltEndpoint *string
	Temperature                                      *float64
}

// Current is the stored configuration a change applies to.
type Current struct{ Provider, Model string }

// NewMysis checks a create and applies the defaults: a valid name (libs/names: refused, never trimmed), bounded
// fields, a known provider, a model unless the provider is Autopilot, one the provider serves, a temperature in
// [0, 2], a prompt (the default when blank) and a known endpoint. r must have its defaults (WithDefaults).
func (r Rules) NewMysis(ctx context.Context, c Create) (NewMysis, error) {
	if err := names.Check("name", c.Name); err != nil {
		return NewMysis{}, err
	}
	if err := CheckSizes(c.Provider, c.Model, c.SystemPrompt); err != nil {
		return NewMysis{}, err
	}
	m := NewMysis{Name: c.Name, Provider: c.Provider, Model: c.Model, Temperature: r.Temperature, SystemPrompt: c.SystemPrompt,
		SpaceMoltEndpoint: c.SpaceMoltEndpoint}
	if m.Provider == "" {
		m.Provider = r.Provider
	}
	if err := r.checkProvider("provider", m.Provider); err != nil {
		return NewMysis{}, err
	}
	if m.Model == "" {
		m.Model = r.Models[m.Provider]
	}
	if err := r.checkModel(ctx, m.Provider, m.Model); err != nil {
		return NewMysis{}, err
	}
	if c.Temperature != nil {
		m.Temperature = *c.Temperature
	}
	if err := checkTemperature("temperature", m.Temperature); err != nil {
		return NewMysis{}, err
	}
	if strings.TrimSpace(m.SystemPrompt) == "" {
		m.SystemPrompt = r.SystemPrompt
	}
	if err := CheckEndpoint(m.SpaceMoltEndpoint); err != nil {
		return NewMysis{}, err
	}
	return m, nil
}

// Change checks a configure against the mysis's current configuration: bounded fields, a known endpoint and
// provider, no blank model or prompt, a temperature in [0, 2]; a new provider without a model named takes the
// provider's default model; and the provider and model the mysis ends with must serve (a model unless Autopilot).
func (r Rules) Change(ctx context.Context, cur Current, c Configure) (ConfigChange, error) {
	if err := CheckSizes(deref(c.Provider), deref(c.Model), deref(c.SystemPrompt)); err != nil {
		return ConfigChange{}, err
	}
	ch := ConfigChange{Model: c.Model, Temperature: c.Temperature, SystemPrompt: c.SystemPrompt, SpaceMoltEndpoint: c.SpaceMoltEndpoint}
	if c.SpaceMoltEndpoint != nil {
		if err := CheckEndpoint(*c.SpaceMoltEndpoint); err != nil {
			return ConfigChange{}, err
		}
	}
	if c.Provider != nil {
		if err := r.checkProvider("provider", *c.Provider); err != nil {
			return ConfigChange{}, err
		}
		ch.Provider = c.Provider
		if def := r.Models[*c.Provider]; c.Model == nil && def != "" && *c.Provider != cur.Provider {
			ch.Model = &def
		}
	}
	if c.Model != nil && strings.TrimSpace(*c.Model) == "" {
		return ConfigChange{}, errs.InvalidField("model", "must not be empty")
	}
	if c.Temperature != nil {
		if err := checkTemperature("temperature", *c.Temperature); err != nil {
			return ConfigChange{}, err
		}
	}
	if c.SystemPrompt != nil && strings.TrimSpace(*c.SystemPrompt) == "" {
		return ConfigChange{}, errs.InvalidField("system_prompt", "must not be empty")
	}
	if ch.Provider != nil || ch.Model != nil {
		provider, model := cur.Provider, cur.Model
		if ch.Provider != nil {
			provider = *ch.Provider
		}
		if ch.Model != nil {
			model = *ch.Model
		}
		if err := r.checkModel(ctx, provider, model); err != nil {
			return ConfigChange{}, err
		}
	}
	return ch, nil
}

// checkModel is the provider rule (memory stores the names as given): only Autopilot runs without a model, and the
// provider must serve the model when the rules can ask.
func (r Rules) checkModel(ctx context.Context, provider, model string) error {
	if model == "" && provider != Autopilot {
		return errs.InvalidField("model", "required: provider %q has no default model", provider)
	}
	if r.Serves == nil {
		return nil
	}
	return r.Serves(ctx, provider, model)
}

func (r Rules) checkProvider(field, p string) error {
	if err := checkSize(field, p, chat.MaxProviderBytes); err != nil {
		return err
	}
	if len(r.Providers) > 0 && !slices.Contains(r.Providers, p) {
		return errs.InvalidField(field, "unknown provider %q (have %s)", p, strings.Join(r.Providers, ", "))
	}
	return nil
}

// CheckSizes bounds a create's or configure's provider, model and system prompt (empty: not given) before anything
// else reads them: memory would refuse them too, but only after the runner relayed up to 64 MiB, and a check that
// echoes the value (an unknown provider %q) would carry it back in the status.
func CheckSizes(provider, model, prompt string) error {
	return errors.Join(checkSize("provider", provider, chat.MaxProviderBytes),
		checkSize("model", model, chat.MaxShortFieldBytes),
		checkSize("system_prompt", prompt, chat.MaxSystemPromptBytes))
}

func checkSize(field, v string, limit int) error {
	if len(v) > limit {
		return errs.InvalidField(field, "too long: %d bytes, at most %d", len(v), limit)
	}
	return nil
}

func checkTemperature(field string, t float64) error {
	if t < 0 || t > 2 {
		return errs.InvalidField(field, "must be between 0 and 2, got %v", t)
	}
	return nil
}

// CheckEndpoint refuses a SpaceMolt endpoint other than v1, v2 or "" (the swarm's), naming the field, before
// anything is stored (the memory service checks the same).
func CheckEndpoint(e string) error {
	if e == "" || e == "v1" || e == "v2" {
		return nil
	}
	shown := text.Clip(e, 40, "…")
	return errs.InvalidField("spacemolt_endpoint", "must be v1 (the flat tools at /mcp), v2 (the action tools at /mcp/v2) or empty for the swarm's endpoint; got %q", shown)
}

// StopReason is the reason a stop records: the commander's own, trimmed, or StoppedByCommander.
func StopReason(given string) string {
	if r := strings.TrimSpace(given); r != "" {
		return r
	}
	return StoppedByCommander
}

// PageSize is a list's page size: 1–1000, 0 for the default of 100.
func PageSize(n int32) (int32, error) {
	switch {
	case n < 0 || n > 1000:
		return 0, errs.InvalidField("page_size", "must be between 0 and 1000")
	case n == 0:
		return 100, nil
	}
	return n, nil
}

// Ref is how a request names a mysis: by id (any spelling uuid.Parse accepts, ID in canonical form) or by name.
type Ref struct{ ID, Name string }

// ParseRef reads the reference in the request's field field, naming the field when it is empty or neither an id
// nor a valid name (no name is a UUID, libs/names, so an id is never looked up as a name).
func ParseRef(field, ref string) (Ref, error) {
	if ref == "" {
		return Ref{}, errs.InvalidField(field, "required: a mysis id or name")
	}
	if id, err := uuid.Parse(ref); err == nil {
		return Ref{ID: id.String()}, nil
	}
	if err := names.Check(field, ref); err != nil {
		return Ref{}, err
	}
	return Ref{Name: ref}, nil
}

// NotFound is the error for a reference that names no mysis, as the commander wrote it.
func NotFound(ref string) error { return errs.NotFoundf("mysis %q not found", ref) }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
