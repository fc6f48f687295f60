// Package grpcapi serves SwarmService, the commander's admin API. Every replica answers every call: lifecycle
// changes are written to the memory service first (the truth) and then announced with a wake, so whichever replica
// owns the mysis reacts; live status comes from the replicas' shared status bucket and the lease table.
package grpcapi

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/names"
	"github.com/zoeaswarm/zoea/libs/text"
	"github.com/zoeaswarm/zoea/services/runner/internal/composerclient"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/memoryclient"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
	"github.com/zoeaswarm/zoea/services/runner/internal/usage"
)

// Waker announces a lifecycle change to the owning replica.
type Waker interface {
	Wake(ctx context.Context, mysisID string, r mysis.WakeReason) error
}

// Live answers what actors are doing now.
type Live interface {
	// Status is the last status any replica published for the mysis.
	Status(id string) (mysis.Status, bool)
	// Owner is the replica holding the mysis's lease, "" when none.
	Owner(id string) string
	// Silent reports a lease whose holder stopped renewing it, and when it expires at the latest.
	Silent(id string) (expires time.Time, ok bool)
}

// Defaults apply to CreateMysis fields left empty.
type Defaults struct {
	// Provider when the request has none (ZOEA_DEFAULT_PROVIDER).
	Provider string
	// Models per provider.
	Models map[string]string
	// Temperature when unset (0.7).
	Temperature float64
	// SystemPrompt when empty (DefaultSystemPrompt).
	SystemPrompt string
	// Providers are the names this runner can use; others are rejected.
	Providers []string
	// Check, when set, says whether a provider can serve a model now (reachable, key present, model known); create
	// and configure refuse what it refuses, so a mistake is reported to the commander instead of failing the turn.
	Check func(ctx context.Context, provider, model string) error
	// SpendLimits are the configured per-mysis spend limits (ZOEA_SPEND_LIMITS_MYSIS), shown where a mysis has no
	// own limit.
	SpendLimits []usage.Limit
	// Tools, when set, returns the tool definitions a mysis's requests carry on its SpaceMolt endpoint ("v1", "v2",
	// "" for the swarm's), so PreviewContext budgets for them as the real request does.
	Tools func(ctx context.Context, endpoint string) ([]llm.Tool, error)
}

// Memory is the memory service as the admin API uses it; memoryclient.Client implements it. Records come back as
// the memory service stores them (the admin API re-exports them), errors as libs/errs errors.
type Memory interface {
	MysisRecord(ctx context.Context, id string) (*memoryv1.Mysis, error)
	MysisRecordByName(ctx context.Context, name string) (*memoryv1.Mysis, error)
	ListMysisRecords(ctx context.Context, state memoryv1.MysisState, pageSize int32, pageToken string) ([]*memoryv1.Mysis, string, error)
	CreateMysis(ctx context.Context, m memoryclient.NewMysis) (*memoryv1.Mysis, error)
	SetStateRecord(ctx context.Context, id string, ch mysis.StateChange) (*memoryv1.Mysis, error)
	UpdateConfig(ctx context.Context, id string, ch memoryclient.ConfigChange) (*memoryv1.Mysis, error)
	DeleteMysis(ctx context.Context, id string) error
	Recent(ctx context.Context, id string, limit int) ([]mysis.Memory, error)
	Usage(ctx context.Context, q memoryclient.UsageQuery) (*memoryv1.GetUsageResponse, error)
	SetSpendLimits(ctx context.Context, id string, limits []*memoryv1.SpendLimit) error
	OwnSpendLimits(ctx context.Context, id string) ([]usage.Limit, error)
}

// Server implements runnerv1.SwarmServiceServer.
type Server struct {
	runnerv1.UnimplementedSwarmServiceServer
	memory   Memory
	composer Previewer
	wakes    Waker
	live     Live
	defaults Defaults
}

// Previewer composes a mysis's next request without side effects (composerclient.Client implements it over the
// composer service); errors are libs/errs errors. The composition is relayed as the composer sent it.
type Previewer interface {
	Preview(ctx context.Context, mysisID string, policy *composerv1.Policy, beginAutonomousTurn bool, tools []llm.Tool) (*composerv1.ComposeContextResponse, error)
}

// New builds the server.
func New(memory Memory, composer Previewer, wakes Waker, live Live, d Defaults) *Server {
	if d.Temperature == 0 {
		d.Temperature = 0.7
	}
	if d.SystemPrompt == "" {
		d.SystemPrompt = DefaultSystemPrompt
	}
	if d.Provider == "" {
		d.Provider = "autopilot"
	}
	return &Server{memory: memory, composer: composer, wakes: wakes, live: live, defaults: d}
}

// resolve finds a mysis by id (any spelling uuid.Parse accepts, sent on in canonical form) or name, given in the
// request's field "mysis".
func (s *Server) resolve(ctx context.Context, ref string) (*memoryv1.Mysis, error) {
	return s.resolveField(ctx, "mysis", ref)
}

// resolveField is resolve for a reference in the request's field field, which a bad reference's error names.
func (s *Server) resolveField(ctx context.Context, field, ref string) (*memoryv1.Mysis, error) {
	if ref == "" {
		return nil, errs.InvalidField(field, "required: a mysis id or name")
	}
	if id, err := uuid.Parse(ref); err == nil {
		m, err := s.memory.MysisRecord(ctx, id.String())
		if err == nil {
			return m, nil
		}
		if !errs.Is(err, errs.NotFound) {
			return nil, err
		}
		// No name is a UUID (libs/names), so there is no name to fall back to.
		return nil, errs.NotFoundf("mysis %q not found", ref)
	}
	if err := names.Check(field, ref); err != nil {
		return nil, err
	}
	m, err := s.memory.MysisRecordByName(ctx, ref)
	if err != nil {
		if errs.Is(err, errs.NotFound) {
			return nil, errs.NotFoundf("mysis %q not found", ref)
		}
		return nil, err
	}
	return m, nil
}

func (s *Server) statusOf(m *memoryv1.Mysis) *runnerv1.MysisStatus {
	out := &runnerv1.MysisStatus{Mysis: m, Owner: s.live.Owner(m.GetId()), Credits: -1}
	if until, ok := s.live.Silent(m.GetId()); ok && out.Owner != "" {
		out.PausedUntil = timestamppb.New(until)
	}
	if st, ok := s.live.Status(m.GetId()); ok {
		out.LastAction, out.Credits, out.Turns, out.LastError = st.LastAction, st.Credits, st.Turns, st.LastError
		if !st.LastActionAt.IsZero() {
			out.LastActionAt = timestamppb.New(st.LastActionAt)
		}
	}
	return out
}

func (s *Server) checkProvider(field, p string) error {
	if err := checkSize(field, p, chat.MaxProviderBytes); err != nil {
		return err
	}
	if len(s.defaults.Providers) > 0 && !slices.Contains(s.defaults.Providers, p) {
		return errs.InvalidField(field, "unknown provider %q (have %s)", p, strings.Join(s.defaults.Providers, ", "))
	}
	return nil
}

// checkServes asks the provider check, when there is one.
func (s *Server) checkServes(ctx context.Context, provider, model string) error {
	if s.defaults.Check == nil {
		return nil
	}
	return s.defaults.Check(ctx, provider, model)
}

// checkSize refuses a string field longer than the stored limit before anything else reads it: memory would refuse
// it too, but only after the runner relayed up to 64 MiB, and a check that echoes the value (an unknown provider
// %q) would carry it back in the status.
func checkSize(field, v string, limit int) error {
	if len(v) > limit {
		return errs.InvalidField(field, "too long: %d bytes, at most %d", len(v), limit)
	}
	return nil
}

// checkConfigSizes bounds a create's or configure's provider, model and system prompt (empty: not given).
func checkConfigSizes(provider, model, prompt string) error {
	return errors.Join(checkSize("provider", provider, chat.MaxProviderBytes),
		checkSize("model", model, chat.MaxShortFieldBytes),
		checkSize("system_prompt", prompt, chat.MaxSystemPromptBytes))
}

func checkTemperature(field string, t float64) error {
	if t < 0 || t > 2 {
		return errs.InvalidField(field, "must be between 0 and 2, got %v", t)
	}
	return nil
}

// CreateMysis implements SwarmService.
func (s *Server) CreateMysis(ctx context.Context, req *runnerv1.CreateMysisRequest) (*runnerv1.CreateMysisResponse, error) {
	// One rule for names in every service (libs/names): refused, never trimmed, so the name stored is the one sent.
	name := req.GetName()
	if err := names.Check("name", name); err != nil {
		return nil, err
	}
	if err := checkConfigSizes(req.GetProvider(), req.GetModel(), req.GetSystemPrompt()); err != nil {
		return nil, err
	}
	provider := req.GetProvider()
	if provider == "" {
		provider = s.defaults.Provider
	}
	if err := s.checkProvider("provider", provider); err != nil {
		return nil, err
	}
	model := req.GetModel()
	if model == "" {
		model = s.defaults.Models[provider]
	}
	if model == "" && provider != "autopilot" {
		return nil, errs.InvalidField("model", "required: provider %q has no default model", provider)
	}
	if err := s.checkServes(ctx, provider, model); err != nil {
		return nil, err
	}
	temp := s.defaults.Temperature
	if req.Temperature != nil {
		temp = req.GetTemperature()
	}
	if err := checkTemperature("temperature", temp); err != nil {
		return nil, err
	}
	prompt := req.GetSystemPrompt()
	if strings.TrimSpace(prompt) == "" {
		prompt = s.defaults.SystemPrompt
	}
	if err := checkEndpoint(req.GetSpacemoltEndpoint()); err != nil {
		return nil, err
	}
	m, err := s.memory.CreateMysis(ctx, memoryclient.NewMysis{Name: name, Provider: provider, Model: model, Temperature: temp, SystemPrompt: prompt,
		SpaceMoltEndpoint: req.GetSpacemoltEndpoint()})
	if err != nil {
		return nil, err
	}
	if req.GetStart() {
		if m, err = s.start(ctx, m); err != nil {
			return nil, err
		}
	}
	return &runnerv1.CreateMysisResponse{Status: s.statusOf(m)}, nil
}

// ListMyses implements SwarmService.
func (s *Server) ListMyses(ctx context.Context, req *runnerv1.ListMysesRequest) (*runnerv1.ListMysesResponse, error) {
	size := req.GetPageSize()
	switch {
	case size < 0 || size > 1000:
		return nil, errs.InvalidField("page_size", "must be between 0 and 1000")
	case size == 0:
		size = 100
	}
	myses, next, err := s.memory.ListMysisRecords(ctx, req.GetState(), size, req.GetPageToken())
	if err != nil {
		return nil, err
	}
	out := &runnerv1.ListMysesResponse{NextPageToken: next}
	for _, m := range myses {
		out.Myses = append(out.Myses, s.statusOf(m))
	}
	if err := s.addUsage(ctx, out.Myses); err != nil {
		return nil, err
	}
	if err := s.addLimits(ctx, out.Myses); err != nil {
		return nil, err
	}
	return out, nil
}

// GetMysis implements SwarmService.
func (s *Server) GetMysis(ctx context.Context, req *runnerv1.GetMysisRequest) (*runnerv1.GetMysisResponse, error) {
	m, err := s.resolve(ctx, req.GetMysis())
	if err != nil {
		return nil, err
	}
	st := s.statusOf(m)
	if err := s.addUsageAndLimits(ctx, st); err != nil {
		return nil, err
	}
	return &runnerv1.GetMysisResponse{Status: st}, nil
}

// start sets a mysis running with a fresh encouragement count and wakes its owner.
func (s *Server) start(ctx context.Context, m *memoryv1.Mysis) (*memoryv1.Mysis, error) {
	zero := 0
	started, err := s.memory.SetStateRecord(ctx, m.GetId(), mysis.StateChange{To: mysis.StateRunning, Reason: "started by commander", Count: &zero})
	if err != nil {
		return nil, err
	}
	_ = s.wakes.Wake(ctx, m.GetId(), mysis.WakeStart) // a lost wake is caught by the owner's next scan
	return started, nil
}

// StartMysis implements SwarmService.
func (s *Server) StartMysis(ctx context.Context, req *runnerv1.StartMysisRequest) (*runnerv1.StartMysisResponse, error) {
	m, err := s.resolve(ctx, req.GetMysis())
	if err != nil {
		return nil, err
	}
	if m, err = s.start(ctx, m); err != nil {
		return nil, err
	}
	return &runnerv1.StartMysisResponse{Status: s.statusOf(m)}, nil
}

// StopMysis implements SwarmService.
func (s *Server) StopMysis(ctx context.Context, req *runnerv1.StopMysisRequest) (*runnerv1.StopMysisResponse, error) {
	m, err := s.resolve(ctx, req.GetMysis())
	if err != nil {
		return nil, err
	}
	reason := strings.TrimSpace(req.GetReason())
	if reason == "" {
		reason = "stopped by commander"
	}
	stopped, err := s.memory.SetStateRecord(ctx, m.GetId(), mysis.StateChange{To: mysis.StateStopped, Reason: reason})
	if err != nil {
		return nil, err
	}
	_ = s.wakes.Wake(ctx, m.GetId(), mysis.WakeStop)
	return &runnerv1.StopMysisResponse{Status: s.statusOf(stopped)}, nil
}

// ConfigureMysis implements SwarmService.
func (s *Server) ConfigureMysis(ctx context.Context, req *runnerv1.ConfigureMysisRequest) (*runnerv1.ConfigureMysisResponse, error) {
	if err := checkConfigSizes(req.GetProvider(), req.GetModel(), req.GetSystemPrompt()); err != nil {
		return nil, err
	}
	m, err := s.resolve(ctx, req.GetMysis())
	if err != nil {
		return nil, err
	}
	up := memoryclient.ConfigChange{Model: req.Model, Temperature: req.Temperature, SystemPrompt: req.SystemPrompt, SpaceMoltEndpoint: req.SpacemoltEndpoint}
	if req.SpacemoltEndpoint != nil {
		if err := checkEndpoint(req.GetSpacemoltEndpoint()); err != nil {
			return nil, err
		}
	}
	if req.Provider != nil {
		if err := s.checkProvider("provider", req.GetProvider()); err != nil {
			return nil, err
		}
		up.Provider = req.Provider
		if req.Model == nil && s.defaults.Models[req.GetProvider()] != "" && req.GetProvider() != m.GetProvider() {
			model := s.defaults.Models[req.GetProvider()]
			up.Model = &model
		}
	}
	if req.Model != nil && strings.TrimSpace(req.GetModel()) == "" {
		return nil, errs.InvalidField("model", "must not be empty")
	}
	if req.Temperature != nil {
		if err := checkTemperature("temperature", req.GetTemperature()); err != nil {
			return nil, err
		}
	}
	if req.SystemPrompt != nil && strings.TrimSpace(req.GetSystemPrompt()) == "" {
		return nil, errs.InvalidField("system_prompt", "must not be empty")
	}
	if up.Provider != nil || up.Model != nil {
		provider, model := m.GetProvider(), m.GetModel()
		if up.Provider != nil {
			provider = *up.Provider
		}
		if up.Model != nil {
			model = *up.Model
		}
		// The runner owns the provider rules (memory stores the name as given): only autopilot runs without a model.
		if model == "" && provider != "autopilot" {
			return nil, errs.InvalidField("model", "required: provider %q has no default model", provider)
		}
		if err := s.checkServes(ctx, provider, model); err != nil {
			return nil, err
		}
	}
	updated, err := s.memory.UpdateConfig(ctx, m.GetId(), up)
	if err != nil {
		return nil, err
	}
	_ = s.wakes.Wake(ctx, m.GetId(), mysis.WakeConfigure)
	return &runnerv1.ConfigureMysisResponse{Status: s.statusOf(updated)}, nil
}

// DeleteMysis implements SwarmService.
func (s *Server) DeleteMysis(ctx context.Context, req *runnerv1.DeleteMysisRequest) (*runnerv1.DeleteMysisResponse, error) {
	m, err := s.resolve(ctx, req.GetMysis())
	if err != nil {
		return nil, err
	}
	if err := s.memory.DeleteMysis(ctx, m.GetId()); err != nil {
		return nil, err
	}
	_ = s.wakes.Wake(ctx, m.GetId(), mysis.WakeDelete)
	return &runnerv1.DeleteMysisResponse{}, nil
}

// PreviewContext implements SwarmService: the composition the mysis's next LLM call would get, without side
// effects (a nudge it announces is not stored).
func (s *Server) PreviewContext(ctx context.Context, req *runnerv1.PreviewContextRequest) (*runnerv1.PreviewContextResponse, error) {
	m, err := s.resolve(ctx, req.GetMysis())
	if err != nil {
		return nil, err
	}
	recent, err := s.memory.Recent(ctx, m.GetId(), 1)
	if err != nil {
		return nil, err
	}
	autonomous := true
	if len(recent) > 0 {
		last := recent[len(recent)-1]
		autonomous = last.Role == "assistant" && len(last.ToolCalls) == 0 || last.Role == "system"
	}
	var tools []llm.Tool
	if s.defaults.Tools != nil {
		if tools, err = s.defaults.Tools(ctx, m.GetSpacemoltEndpoint()); err != nil {
			return nil, errs.Unavailablef(err, "the game server did not list its tools, which the preview needs to count the request's tokens (the runner's log says why)")
		}
	}
	resp, err := s.composer.Preview(ctx, m.GetId(), req.GetPolicy(), autonomous, tools)
	if err != nil {
		return nil, err
	}
	return &runnerv1.PreviewContextResponse{Messages: resp.GetMessages(), Manifest: resp.GetManifest(), Encouragement: resp.GetEncouragement(),
		Tools: composerclient.ToProtoTools(tools)}, nil
}

// checkEndpoint refuses a SpaceMolt endpoint other than v1, v2 or "" (the swarm's), naming the field, before
// anything is stored (the memory service checks the same).
func checkEndpoint(e string) error {
	if e == "" || e == "v1" || e == "v2" {
		return nil
	}
	shown := text.Clip(e, 40, "…")
	return errs.InvalidField("spacemolt_endpoint", "must be v1 (the flat tools at /mcp), v2 (the action tools at /mcp/v2) or empty for the swarm's endpoint; got %q", shown)
}
