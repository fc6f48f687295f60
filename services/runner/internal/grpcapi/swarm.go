// Package grpcapi serves SwarmService, the commander's admin API. Every replica answers every call: lifecycle
// changes are written to the memory service first (the truth) and then announced with a wake, so whichever replica
// owns the mysis reacts; live status comes from the replicas' shared status bucket and the lease table.
package grpcapi

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/runner/internal/admin"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
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

// Defaults are the admin rules (create and configure) and what the transport adds to a status and a preview.
type Defaults struct {
	// Rules are the create and configure rules and their defaults (package admin).
	Rules admin.Rules
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
	CreateMysis(ctx context.Context, m admin.NewMysis) (*memoryv1.Mysis, error)
	SetStateRecord(ctx context.Context, id string, ch mysis.StateChange) (*memoryv1.Mysis, error)
	UpdateConfig(ctx context.Context, id string, ch admin.ConfigChange) (*memoryv1.Mysis, error)
	DeleteMysis(ctx context.Context, id string) error
	Recent(ctx context.Context, id string, limit int) ([]mysis.Memory, error)
	Usage(ctx context.Context, q *memoryv1.GetUsageRequest) (*memoryv1.GetUsageResponse, error)
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
// composer service); errors are libs/errs errors. The composition is relayed as the composer sent it, with the tool
// definitions as it was sent them.
type Previewer interface {
	Preview(ctx context.Context, mysisID string, policy *composerv1.Policy, beginAutonomousTurn bool, tools []llm.Tool) (*composerv1.ComposeContextResponse, []*composerv1.ToolDefinition, error)
}

// New builds the server.
func New(memory Memory, composer Previewer, wakes Waker, live Live, d Defaults) *Server {
	d.Rules = d.Rules.WithDefaults()
	return &Server{memory: memory, composer: composer, wakes: wakes, live: live, defaults: d}
}

// resolve finds a mysis by id (any spelling uuid.Parse accepts, sent on in canonical form) or name, given in the
// request's field "mysis".
func (s *Server) resolve(ctx context.Context, ref string) (*memoryv1.Mysis, error) {
	return s.resolveField(ctx, "mysis", ref)
}

// resolveField is resolve for a reference in the request's field field, which a bad reference's error names.
func (s *Server) resolveField(ctx context.Context, field, ref string) (*memoryv1.Mysis, error) {
	r, err := admin.ParseRef(field, ref)
	if err != nil {
		return nil, err
	}
	var m *memoryv1.Mysis
	if r.ID != "" {
		m, err = s.memory.MysisRecord(ctx, r.ID)
	} else {
		m, err = s.memory.MysisRecordByName(ctx, r.Name)
	}
	if errs.Is(err, errs.NotFound) {
		return nil, admin.NotFound(ref)
	}
	return m, err
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
		out.Ship = shipView(st.Ship)
	}
	return out
}

// shipView is the wire form of the game state the mysis's newest get_status reported.
func shipView(sh *mysis.Ship) *runnerv1.ShipView {
	if sh == nil {
		return nil
	}
	out := &runnerv1.ShipView{
		System: sh.System, Poi: sh.POI, DockedAt: sh.DockedAt, Class: sh.Class, Hull: sh.Hull, MaxHull: sh.MaxHull,
		Shield: sh.Shield, MaxShield: sh.MaxShield, Fuel: sh.Fuel, MaxFuel: sh.MaxFuel, CargoUsed: sh.CargoUsed,
		CargoCapacity: sh.CargoCapacity, CreditsEarned: sh.CreditsEarned, SeenAt: timestamppb.New(sh.At),
	}
	for _, c := range sh.Cargo {
		out.Cargo = append(out.Cargo, &runnerv1.CargoItem{ItemId: c.ItemID, Quantity: c.Quantity})
	}
	return out
}

// CreateMysis implements SwarmService.
func (s *Server) CreateMysis(ctx context.Context, req *runnerv1.CreateMysisRequest) (*runnerv1.CreateMysisResponse, error) {
	nm, err := s.defaults.Rules.NewMysis(ctx, admin.Create{Name: req.GetName(), Provider: req.GetProvider(), Model: req.GetModel(),
		SystemPrompt: req.GetSystemPrompt(), Temperature: req.Temperature, SpaceMoltEndpoint: req.GetSpacemoltEndpoint()})
	if err != nil {
		return nil, err
	}
	m, err := s.memory.CreateMysis(ctx, nm)
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
	size, err := admin.PageSize(req.GetPageSize())
	if err != nil {
		return nil, err
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
	started, err := s.memory.SetStateRecord(ctx, m.GetId(), mysis.StateChange{To: mysis.StateRunning, Reason: admin.StartedByCommander, Count: &zero})
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
	stopped, err := s.memory.SetStateRecord(ctx, m.GetId(), mysis.StateChange{To: mysis.StateStopped, Reason: admin.StopReason(req.GetReason())})
	if err != nil {
		return nil, err
	}
	_ = s.wakes.Wake(ctx, m.GetId(), mysis.WakeStop)
	return &runnerv1.StopMysisResponse{Status: s.statusOf(stopped)}, nil
}

// ConfigureMysis implements SwarmService. Oversized fields are refused before the mysis is looked up.
func (s *Server) ConfigureMysis(ctx context.Context, req *runnerv1.ConfigureMysisRequest) (*runnerv1.ConfigureMysisResponse, error) {
	if err := admin.CheckSizes(req.GetProvider(), req.GetModel(), req.GetSystemPrompt()); err != nil {
		return nil, err
	}
	m, err := s.resolve(ctx, req.GetMysis())
	if err != nil {
		return nil, err
	}
	ch, err := s.defaults.Rules.Change(ctx, admin.Current{Provider: m.GetProvider(), Model: m.GetModel()}, admin.Configure{
		Provider: req.Provider, Model: req.Model, SystemPrompt: req.SystemPrompt, SpaceMoltEndpoint: req.SpacemoltEndpoint, Temperature: req.Temperature})
	if err != nil {
		return nil, err
	}
	updated, err := s.memory.UpdateConfig(ctx, m.GetId(), ch)
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
	resp, sent, err := s.composer.Preview(ctx, m.GetId(), req.GetPolicy(), autonomous, tools)
	if err != nil {
		return nil, err
	}
	return &runnerv1.PreviewContextResponse{Messages: resp.GetMessages(), Manifest: resp.GetManifest(), Encouragement: resp.GetEncouragement(),
		Tools: sent}, nil
}
