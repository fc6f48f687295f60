package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// windowRelay is what a GetComposeWindow request carries besides the window query: rows to store before the window
// is read, and the time whose spend to return with it (issue 16: one round trip per tool-loop iteration instead of
// an append, a window read and a spend read).
type windowRelay struct {
	append  []memory.NewMemory
	spend   bool
	spendAt time.Time
}

// fromProtoWindowRelay converts and checks the request's append rows and spend time. Fields are named as the
// request names them ("append[2].content", "spend_at").
func fromProtoWindowRelay(req *memoryv1.GetComposeWindowRequest) (windowRelay, error) {
	var r windowRelay
	if req.SpendAt != nil {
		if err := req.GetSpendAt().CheckValid(); err != nil {
			return windowRelay{}, errs.InvalidField("spend_at", "not a valid timestamp")
		}
		r.spend, r.spendAt = true, req.GetSpendAt().AsTime()
	}
	in := req.GetAppend()
	if len(in) == 0 {
		return r, nil
	}
	if len(in) > memory.MaxBatch {
		return windowRelay{}, errs.InvalidField("append", "at most %d memories per call, got %d", memory.MaxBatch, len(in))
	}
	r.append = make([]memory.NewMemory, len(in))
	for i, n := range in {
		m, err := fromProtoNewMemory(fmt.Sprintf("append[%d]", i), n)
		if err != nil {
			return windowRelay{}, err
		}
		r.append[i] = m
	}
	return r, nil
}

// appendForWindow stores the relay's rows with AppendMemories' exact semantics (the service's own AppendMemories:
// validation, one transaction, gapless seq, turns, idempotency keys) and returns them as stored, in request order.
func (s *Server) appendForWindow(ctx context.Context, mysisID string, r windowRelay) ([]*memoryv1.Memory, error) {
	if len(r.append) == 0 {
		return nil, nil
	}
	out, err := s.svc.AppendMemories(ctx, mysisID, r.append)
	if err != nil {
		return nil, renameMemoriesField(err)
	}
	return toProtoMemories(out), nil
}

// spendForWindow reads the mysis's spend when the request asked for it (nil otherwise).
func (s *Server) spendForWindow(ctx context.Context, mysisID string, r windowRelay) (*memoryv1.GetSpendResponse, error) {
	if !r.spend {
		return nil, nil
	}
	sp, err := s.svc.GetSpend(ctx, mysisID, r.spendAt)
	if err != nil {
		return nil, err
	}
	return &memoryv1.GetSpendResponse{Limits: ToProtoSpendLimits(sp.Limits), Mysis: toProtoSpendCounts(sp.Mysis), Swarm: toProtoSpendCounts(sp.Swarm)}, nil
}

// renameMemoriesField makes an error of the append that names AppendMemories' field ("memories[3]…": bad input, an
// idempotency key reused with other content) name this request's field ("append[3]…"), so the caller is told what
// it can fix.
func renameMemoriesField(err error) error {
	var e *errs.Error
	if !errors.As(err, &e) || !strings.HasPrefix(e.Field, "memories") {
		return err
	}
	c := *e
	c.Field = "append" + strings.TrimPrefix(e.Field, "memories")
	c.Msg = strings.ReplaceAll(c.Msg, "memories[", "append[")
	return &c
}
