// Package backend is what the commander's consoles ask of the swarm: the terminal console (`zoea tui`,
// internal/tui) and the web console (`zoea web`, internal/web) both talk to the runner, bus and memory services
// through Backend, and read the same key table (keys.go). GRPC is the real Backend; tests drive scripted ones.
package backend

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/memoryrules"
)

// Backend is what the console asks of the swarm. Myses are named by name or id, like the CLI's arguments.
type Backend interface {
	List(ctx context.Context) ([]*runnerv1.MysisStatus, error)
	Get(ctx context.Context, mysis string) (*runnerv1.MysisStatus, error)
	// Create creates a mysis as req says (name, provider, model, temperature, system prompt, endpoint, start).
	Create(ctx context.Context, req *runnerv1.CreateMysisRequest) (*runnerv1.MysisStatus, error)
	Start(ctx context.Context, mysis string) error
	Stop(ctx context.Context, mysis string) error
	Delete(ctx context.Context, mysis string) error
	Configure(ctx context.Context, req *runnerv1.ConfigureMysisRequest) (*runnerv1.MysisStatus, error)
	// Broadcast returns how many myses it is delivered to.
	Broadcast(ctx context.Context, text string) (int32, error)
	Send(ctx context.Context, mysis, text string) error
	// History is the mysis's newest memories, oldest first.
	History(ctx context.Context, mysisID string, limit int32) ([]*memoryv1.Memory, error)
	Preview(ctx context.Context, mysis string) (*runnerv1.PreviewContextResponse, error)
	// Watch streams every event of the swarm to fn until ctx ends or the stream fails; connected (when not nil) is
	// called once the bus has accepted the watch, before the first event.
	Watch(ctx context.Context, connected func(), fn func(*busv1.Event)) error
	// Search ranks a mysis's messages and tool calls (by name and arguments) for query.
	Search(ctx context.Context, mysisID, query string, order memoryv1.SearchOrder, limit int32) (*memoryv1.SearchMessagesResponse, error)
	// Usage sums the LLM calls started in [from, to) (zero times: unbounded) grouped by group, every page read.
	Usage(ctx context.Context, from, to time.Time, group memoryv1.UsageGroup) (*runnerv1.GetUsageResponse, error)
	// TopUsage is the n myses that cost most in [from, to), highest first (equal costs in name order), with the
	// whole swarm's total: one request.
	TopUsage(ctx context.Context, from, to time.Time, n int32) (*runnerv1.GetUsageResponse, error)
	// UsageOf sums the calls of these myses (ids or names) started in [from, to) by mysis (rows only, no
	// total), UsagePage myses a request.
	UsageOf(ctx context.Context, myses []string, from, to time.Time) (*runnerv1.GetUsageResponse, error)
	// SetLimits replaces a mysis's own spend limits (none: the configured defaults apply again).
	SetLimits(ctx context.Context, mysis string, limits []*memoryv1.SpendLimit) (*runnerv1.MysisStatus, error)
	// Spend is what a mysis spent in the hour, day and total windows that contain now.
	Spend(ctx context.Context, mysisID string) (*memoryv1.GetSpendResponse, error)
}

// GRPC is the Backend over the runner, bus and memory services.
type GRPC struct {
	Swarm  runnerv1.SwarmServiceClient
	Bus    busv1.BusServiceClient
	Memory memoryv1.MemoryServiceClient
}

var _ Backend = GRPC{}

// List implements Backend.
func (g GRPC) List(ctx context.Context) ([]*runnerv1.MysisStatus, error) {
	var all []*runnerv1.MysisStatus
	req := &runnerv1.ListMysesRequest{PageSize: 1000}
	for {
		resp, err := g.Swarm.ListMyses(ctx, req)
		if err != nil {
			return nil, err
		}
		all = append(all, resp.GetMyses()...)
		if req.PageToken = resp.GetNextPageToken(); req.PageToken == "" {
			return all, nil
		}
	}
}

// Get implements Backend.
func (g GRPC) Get(ctx context.Context, mysis string) (*runnerv1.MysisStatus, error) {
	resp, err := g.Swarm.GetMysis(ctx, &runnerv1.GetMysisRequest{Mysis: mysis})
	return resp.GetStatus(), err
}

// Create implements Backend.
func (g GRPC) Create(ctx context.Context, req *runnerv1.CreateMysisRequest) (*runnerv1.MysisStatus, error) {
	resp, err := g.Swarm.CreateMysis(ctx, req)
	return resp.GetStatus(), err
}

// Start implements Backend.
func (g GRPC) Start(ctx context.Context, mysis string) error {
	_, err := g.Swarm.StartMysis(ctx, &runnerv1.StartMysisRequest{Mysis: mysis})
	return err
}

// Stop implements Backend.
func (g GRPC) Stop(ctx context.Context, mysis string) error {
	_, err := g.Swarm.StopMysis(ctx, &runnerv1.StopMysisRequest{Mysis: mysis, Reason: memoryrules.CommanderStopReason})
	return err
}

// Delete implements Backend.
func (g GRPC) Delete(ctx context.Context, mysis string) error {
	_, err := g.Swarm.DeleteMysis(ctx, &runnerv1.DeleteMysisRequest{Mysis: mysis})
	return err
}

// Configure implements Backend.
func (g GRPC) Configure(ctx context.Context, req *runnerv1.ConfigureMysisRequest) (*runnerv1.MysisStatus, error) {
	resp, err := g.Swarm.ConfigureMysis(ctx, req)
	return resp.GetStatus(), err
}

// Broadcast implements Backend.
func (g GRPC) Broadcast(ctx context.Context, text string) (int32, error) {
	resp, err := g.Bus.Broadcast(ctx, &busv1.BroadcastRequest{Content: text})
	return resp.GetTargetCount(), err
}

// Send implements Backend.
func (g GRPC) Send(ctx context.Context, mysis, text string) error {
	_, err := g.Bus.SendDirect(ctx, &busv1.SendDirectRequest{Mysis: mysis, Content: text})
	return err
}

// History implements Backend.
func (g GRPC) History(ctx context.Context, mysisID string, limit int32) ([]*memoryv1.Memory, error) {
	resp, err := g.Memory.ListRecentMemories(ctx, &memoryv1.ListRecentMemoriesRequest{MysisId: mysisID, Limit: limit})
	return resp.GetMemories(), err
}

// Preview implements Backend.
func (g GRPC) Preview(ctx context.Context, mysis string) (*runnerv1.PreviewContextResponse, error) {
	return g.Swarm.PreviewContext(ctx, &runnerv1.PreviewContextRequest{Mysis: mysis})
}

// Watch implements Backend.
func (g GRPC) Watch(ctx context.Context, connected func(), fn func(*busv1.Event)) error {
	stream, err := g.Bus.WatchEvents(ctx, &busv1.WatchEventsRequest{})
	if err != nil {
		return err
	}
	// The bus sends the stream's headers once it watches (or fails the call): the stream is open when they come,
	// or at the latest with the first event.
	md, err := stream.Header()
	if err != nil {
		return err
	}
	opened := false
	open := func() {
		if !opened && connected != nil {
			connected()
		}
		opened = true
	}
	if md != nil {
		open()
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			return err
		}
		open()
		fn(resp.GetEvent())
	}
}

// Search implements Backend.
func (g GRPC) Search(ctx context.Context, mysisID, query string, order memoryv1.SearchOrder, limit int32) (*memoryv1.SearchMessagesResponse, error) {
	return g.Memory.SearchMessages(ctx, &memoryv1.SearchMessagesRequest{MysisId: mysisID, Query: query, Order: order, Limit: limit})
}

// Usage implements Backend.
func (g GRPC) Usage(ctx context.Context, from, to time.Time, group memoryv1.UsageGroup) (*runnerv1.GetUsageResponse, error) {
	req := &runnerv1.GetUsageRequest{GroupBy: group, PageSize: 1000}
	if !from.IsZero() {
		req.From = timestamppb.New(from)
	}
	if !to.IsZero() {
		req.To = timestamppb.New(to)
	}
	all := &runnerv1.GetUsageResponse{}
	for {
		resp, err := g.Swarm.GetUsage(ctx, req)
		if err != nil {
			return nil, err
		}
		all.Total = resp.GetTotal()
		all.Rows = append(all.Rows, resp.GetRows()...)
		if req.PageToken = resp.GetNextPageToken(); req.PageToken == "" {
			return all, nil
		}
	}
}

// UsagePage is how many myses one by-mysis usage request asks: at 10,000 myses and 1,000,000 calls a page of 200
// stays within 50 ms (docs/BENCHMARKS.md), a page of 1,000 did not.
const UsagePage = 200

// TopUsage implements Backend.
func (g GRPC) TopUsage(ctx context.Context, from, to time.Time, n int32) (*runnerv1.GetUsageResponse, error) {
	req := &runnerv1.GetUsageRequest{GroupBy: memoryv1.UsageGroup_USAGE_GROUP_MYSIS, Top: n}
	if !from.IsZero() {
		req.From = timestamppb.New(from)
	}
	if !to.IsZero() {
		req.To = timestamppb.New(to)
	}
	return g.Swarm.GetUsage(ctx, req)
}

// UsageOf implements Backend.
func (g GRPC) UsageOf(ctx context.Context, myses []string, from, to time.Time) (*runnerv1.GetUsageResponse, error) {
	all := &runnerv1.GetUsageResponse{Total: &memoryv1.UsageTotals{}}
	for len(myses) > 0 {
		n := min(len(myses), UsagePage)
		req := &runnerv1.GetUsageRequest{Myses: myses[:n], GroupBy: memoryv1.UsageGroup_USAGE_GROUP_MYSIS, PageSize: int32(n)}
		myses = myses[n:]
		if !from.IsZero() {
			req.From = timestamppb.New(from)
		}
		if !to.IsZero() {
			req.To = timestamppb.New(to)
		}
		resp, err := g.Swarm.GetUsage(ctx, req)
		if err != nil {
			return nil, err
		}
		all.Rows = append(all.Rows, resp.GetRows()...)
	}
	return all, nil
}

// SetLimits implements Backend.
func (g GRPC) SetLimits(ctx context.Context, mysis string, limits []*memoryv1.SpendLimit) (*runnerv1.MysisStatus, error) {
	resp, err := g.Swarm.SetSpendLimits(ctx, &runnerv1.SetSpendLimitsRequest{Mysis: mysis, Limits: limits})
	return resp.GetStatus(), err
}

// Spend implements Backend.
func (g GRPC) Spend(ctx context.Context, mysisID string) (*memoryv1.GetSpendResponse, error) {
	return g.Memory.GetSpend(ctx, &memoryv1.GetSpendRequest{MysisId: mysisID})
}
