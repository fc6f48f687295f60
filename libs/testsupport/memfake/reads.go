package memfake

import (
	"context"
	"slices"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	rules "github.com/zoeaswarm/zoea/libs/memoryrules"
)

// ListMemoriesRange implements MemoryService.ListMemoriesRange: from_seq <= seq <= to_seq (0: no upper bound), oldest
// first, at most limit.
func (f *Fake) ListMemoriesRange(_ context.Context, req *memoryv1.ListMemoriesRangeRequest) (*memoryv1.ListMemoriesRangeResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("ListMemoriesRange"); ok {
		return nil, injected(fault)
	}
	id, err := rules.ParseID("mysis_id", req.GetMysisId())
	if err != nil {
		return nil, err
	}
	limit, err := rules.ValidateRange(req.GetFromSeq(), req.GetToSeq(), int(req.GetLimit()))
	if err != nil {
		return nil, err
	}
	if _, ok := f.myses[id]; !ok {
		return nil, notFound(id)
	}
	resp := &memoryv1.ListMemoriesRangeResponse{}
	for _, m := range f.memories[id] {
		if len(resp.Memories) == limit || req.GetToSeq() != 0 && m.GetSeq() > req.GetToSeq() {
			break
		}
		if m.GetSeq() >= req.GetFromSeq() {
			resp.Memories = append(resp.Memories, proto.Clone(m).(*memoryv1.Memory))
		}
	}
	return resp, nil
}

// GetMemory implements MemoryService.GetMemory: one memory of one mysis.
func (f *Fake) GetMemory(_ context.Context, req *memoryv1.GetMemoryRequest) (*memoryv1.GetMemoryResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fault, ok := f.enter("GetMemory"); ok {
		return nil, injected(fault)
	}
	id, err := rules.ParseID("mysis_id", req.GetMysisId())
	if err != nil {
		return nil, err
	}
	if err := rules.ValidateMemoryID(req.GetMemoryId()); err != nil {
		return nil, err
	}
	for _, m := range f.memories[id] {
		if m.GetId() == req.GetMemoryId() {
			return &memoryv1.GetMemoryResponse{Memory: proto.Clone(m).(*memoryv1.Memory)}, nil
		}
	}
	return nil, errs.NotFoundf("memory %d of mysis %s not found", req.GetMemoryId(), id)
}

// DeliverBroadcast implements MemoryService.DeliverBroadcast: a recorded broadcast goes to more myses, once per
// mysis; the answer holds every target's delivery row in request order.
func (f *Fake) DeliverBroadcast(_ context.Context, req *memoryv1.DeliverBroadcastRequest) (*memoryv1.DeliverBroadcastResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fault, faulty := f.enter("DeliverBroadcast")
	if faulty && !fault.AfterCommit {
		return nil, injected(fault)
	}
	bid, err := rules.ParseID("broadcast_id", req.GetBroadcastId())
	if err != nil {
		return nil, err
	}
	targets, err := rules.ParseTargets("mysis_ids", req.GetMysisIds(), true)
	if err != nil {
		return nil, err
	}
	b, ok := f.broadcasts[bid]
	if !ok {
		return nil, errs.NotFoundf("broadcast %s not found", bid)
	}
	for _, id := range targets {
		if _, ok := f.myses[id]; !ok {
			return nil, notFound(id)
		}
	}
	resp := &memoryv1.DeliverBroadcastResponse{}
	for _, id := range targets {
		if f.delivered[bid][id] {
			i := slices.IndexFunc(f.memories[id], func(m *memoryv1.Memory) bool { return m.GetBroadcastId() == bid })
			resp.Memories = append(resp.Memories, proto.Clone(f.memories[id][i]).(*memoryv1.Memory))
			resp.AlreadyDeliveredCount++
			continue
		}
		m, _ := f.appendLocked(id, &memoryv1.NewMemory{
			Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_BROADCAST, SenderId: b.GetSenderId(), Content: b.GetContent(),
		}, bid, nil)
		if f.delivered[bid] == nil {
			f.delivered[bid] = map[string]bool{}
		}
		f.delivered[bid][id] = true
		resp.Memories = append(resp.Memories, proto.Clone(m).(*memoryv1.Memory))
		resp.DeliveredCount++
	}
	if faulty {
		return nil, injected(fault)
	}
	return resp, nil
}
