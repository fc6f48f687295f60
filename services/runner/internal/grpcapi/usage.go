package grpcapi

import (
	"context"
	"fmt"
	"slices"

	"golang.org/x/sync/errgroup"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/runner/internal/memorypb"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
	"github.com/zoeaswarm/zoea/services/runner/internal/usage"
)

// GetUsage implements SwarmService: myses are named by id or name, the memory service sums.
func (s *Server) GetUsage(ctx context.Context, req *runnerv1.GetUsageRequest) (*runnerv1.GetUsageResponse, error) {
	if len(req.GetMyses()) > 1000 {
		return nil, errs.InvalidField("myses", "at most 1000 myses, got %d", len(req.GetMyses()))
	}
	ids := make([]string, 0, len(req.GetMyses()))
	for i, ref := range req.GetMyses() {
		m, err := s.resolveField(ctx, fmt.Sprintf("myses[%d]", i), ref)
		if err != nil {
			return nil, err
		}
		ids = append(ids, m.GetId())
	}
	resp, err := s.memory.Usage(ctx, &memoryv1.GetUsageRequest{
		MysisIds: ids, From: req.GetFrom(), To: req.GetTo(), GroupBy: req.GetGroupBy(),
		PageSize: req.GetPageSize(), PageToken: req.GetPageToken(), Top: req.GetTop(),
	})
	if err != nil {
		return nil, err
	}
	return &runnerv1.GetUsageResponse{Total: resp.GetTotal(), Rows: resp.GetRows(), NextPageToken: resp.GetNextPageToken()}, nil
}

// SetSpendLimits implements SwarmService. The owner is woken so a mysis idled by a limit re-checks at once.
func (s *Server) SetSpendLimits(ctx context.Context, req *runnerv1.SetSpendLimitsRequest) (*runnerv1.SetSpendLimitsResponse, error) {
	m, err := s.resolve(ctx, req.GetMysis())
	if err != nil {
		return nil, err
	}
	if err := s.memory.SetSpendLimits(ctx, m.GetId(), req.GetLimits()); err != nil {
		return nil, err
	}
	if err := s.wakes.Wake(ctx, m.GetId(), mysis.WakeConfigure); err != nil {
		return nil, err
	}
	st := s.statusOf(m)
	if err := s.addUsageAndLimits(ctx, st); err != nil {
		return nil, err
	}
	return &runnerv1.SetSpendLimitsResponse{Status: st}, nil
}

// usageChunk is how many myses one usage request of addUsage names: at 10,000 myses and 1,000,000 calls 200 by id
// take ~2 ms and 1,000 by id ~24 ms (p50, docs/BENCHMARKS.md), so five requests of 200 beat one of 1,000.
const usageChunk = 200

// addUsage fills the all-time usage of a page of statuses, usageChunk myses a memory call.
func (s *Server) addUsage(ctx context.Context, sts []*runnerv1.MysisStatus) error {
	if len(sts) == 0 {
		return nil
	}
	ids := make([]string, len(sts))
	for i, st := range sts {
		ids[i] = st.GetMysis().GetId()
		st.Usage = &memoryv1.UsageTotals{}
	}
	byID := make(map[string]*memoryv1.UsageTotals, len(ids))
	for chunk := range slices.Chunk(ids, usageChunk) {
		resp, err := s.memory.Usage(ctx, &memoryv1.GetUsageRequest{MysisIds: chunk, GroupBy: memoryv1.UsageGroup_USAGE_GROUP_MYSIS, PageSize: int32(len(chunk))})
		if err != nil {
			return err
		}
		for _, r := range resp.GetRows() {
			byID[r.GetMysisId()] = r.GetTotals()
		}
	}
	for _, st := range sts {
		if t, ok := byID[st.GetMysis().GetId()]; ok {
			st.Usage = t
		}
	}
	return nil
}

// addUsageAndLimits fills one status's usage and its effective spend limits.
func (s *Server) addUsageAndLimits(ctx context.Context, st *runnerv1.MysisStatus) error {
	if err := s.addUsage(ctx, []*runnerv1.MysisStatus{st}); err != nil {
		return err
	}
	return s.addLimits(ctx, []*runnerv1.MysisStatus{st})
}

// addLimits fills each status's effective spend limits (its own over the configured defaults). Memory answers one
// mysis a call, so a page's calls run a few at a time.
func (s *Server) addLimits(ctx context.Context, sts []*runnerv1.MysisStatus) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, st := range sts {
		g.Go(func() error {
			own, err := s.memory.OwnSpendLimits(gctx, st.GetMysis().GetId())
			if err != nil {
				return err
			}
			st.SpendLimits = memorypb.ToProtoLimits(usage.Effective(s.defaults.SpendLimits, own))
			return nil
		})
	}
	return g.Wait()
}
