// Package grpcapi serves zoea.memory.v1.MemoryService: it converts requests into domain values (rejecting what
// cannot be converted — unknown enum numbers, malformed page tokens and timestamps — with the offending field's
// path), calls memory.Service, which validates them, and converts results back. Errors leave as errs
// kinds; libs/server turns them into gRPC status codes in one place.
package grpcapi

import (
	"context"
	"fmt"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// Server implements memoryv1.MemoryServiceServer on the domain's Service.
type Server struct {
	memoryv1.UnimplementedMemoryServiceServer
	svc *memory.Service
}

// New returns a Server that serves svc.
func New(svc *memory.Service) *Server { return &Server{svc: svc} }

var _ memoryv1.MemoryServiceServer = (*Server)(nil)

// CreateMysis implements MemoryService.CreateMysis.
func (s *Server) CreateMysis(ctx context.Context, req *memoryv1.CreateMysisRequest) (*memoryv1.CreateMysisResponse, error) {
	m, err := s.svc.CreateMysis(ctx, memory.NewMysis{
		Name: req.GetName(), Provider: req.GetProvider(), Model: req.GetModel(),
		Temperature: req.GetTemperature(), SystemPrompt: req.GetSystemPrompt(), SpaceMoltEndpoint: req.GetSpacemoltEndpoint(),
	})
	if err != nil {
		return nil, err
	}
	return &memoryv1.CreateMysisResponse{Mysis: toProtoMysis(m)}, nil
}

// GetMysis implements MemoryService.GetMysis.
func (s *Server) GetMysis(ctx context.Context, req *memoryv1.GetMysisRequest) (*memoryv1.GetMysisResponse, error) {
	m, err := s.svc.GetMysis(ctx, req.GetMysisId())
	if err != nil {
		return nil, err
	}
	return &memoryv1.GetMysisResponse{Mysis: toProtoMysis(m)}, nil
}

// GetMysisByName implements MemoryService.GetMysisByName.
func (s *Server) GetMysisByName(ctx context.Context, req *memoryv1.GetMysisByNameRequest) (*memoryv1.GetMysisByNameResponse, error) {
	m, err := s.svc.GetMysisByName(ctx, req.GetName())
	if err != nil {
		return nil, err
	}
	return &memoryv1.GetMysisByNameResponse{Mysis: toProtoMysis(m)}, nil
}

// ListMyses implements MemoryService.ListMyses.
func (s *Server) ListMyses(ctx context.Context, req *memoryv1.ListMysesRequest) (*memoryv1.ListMysesResponse, error) {
	state, err := fromProtoState("state", req.GetState())
	if err != nil {
		return nil, err
	}
	after, err := decodePageToken(req.GetPageToken(), state)
	if err != nil {
		return nil, err
	}
	ms, more, err := s.svc.ListMyses(ctx, memory.ListFilter{State: state, PageSize: int(req.GetPageSize()), AfterName: after})
	if err != nil {
		return nil, err
	}
	resp := &memoryv1.ListMysesResponse{Myses: make([]*memoryv1.Mysis, len(ms))}
	for i, m := range ms {
		resp.Myses[i] = toProtoMysis(m)
	}
	if more && len(ms) > 0 {
		resp.NextPageToken = encodePageToken(pageToken{After: ms[len(ms)-1].Name, State: string(state)})
	}
	return resp, nil
}

// UpdateMysisConfig implements MemoryService.UpdateMysisConfig.
func (s *Server) UpdateMysisConfig(ctx context.Context, req *memoryv1.UpdateMysisConfigRequest) (*memoryv1.UpdateMysisConfigResponse, error) {
	m, err := s.svc.UpdateMysisConfig(ctx, req.GetMysisId(), memory.ConfigPatch{
		Provider: req.Provider, Model: req.Model, Temperature: req.Temperature, SystemPrompt: req.SystemPrompt,
		SpaceMoltEndpoint: req.SpacemoltEndpoint,
	})
	if err != nil {
		return nil, err
	}
	return &memoryv1.UpdateMysisConfigResponse{Mysis: toProtoMysis(m)}, nil
}

// SetMysisState implements MemoryService.SetMysisState.
func (s *Server) SetMysisState(ctx context.Context, req *memoryv1.SetMysisStateRequest) (*memoryv1.SetMysisStateResponse, error) {
	state, err := fromProtoState("state", req.GetState())
	if err != nil {
		return nil, err
	}
	if state == memory.StateAny {
		return nil, errs.InvalidField("state", "required")
	}
	expected, err := fromProtoState("expected_state", req.GetExpectedState())
	if err != nil {
		return nil, err
	}
	m, prev, err := s.svc.SetMysisState(ctx, req.GetMysisId(), memory.StateChange{
		State: state, Reason: req.GetReason(), EncouragementCount: req.EncouragementCount, Expected: expected,
	})
	if err != nil {
		return nil, err
	}
	return &memoryv1.SetMysisStateResponse{Mysis: toProtoMysis(m), PreviousState: toProtoState(prev)}, nil
}

// DeleteMysis implements MemoryService.DeleteMysis.
func (s *Server) DeleteMysis(ctx context.Context, req *memoryv1.DeleteMysisRequest) (*memoryv1.DeleteMysisResponse, error) {
	if err := s.svc.DeleteMysis(ctx, req.GetMysisId()); err != nil {
		return nil, err
	}
	return &memoryv1.DeleteMysisResponse{}, nil
}

// AppendMemories implements MemoryService.AppendMemories.
func (s *Server) AppendMemories(ctx context.Context, req *memoryv1.AppendMemoriesRequest) (*memoryv1.AppendMemoriesResponse, error) {
	in := req.GetMemories()
	// The batch bound (memory.ValidateNewMemories) is checked before converting, so an oversized request costs no
	// conversion work.
	if len(in) > memory.MaxBatch {
		return nil, errs.InvalidField("memories", "at most %d memories per call, got %d", memory.MaxBatch, len(in))
	}
	ms := make([]memory.NewMemory, len(in))
	for i, n := range in {
		m, err := fromProtoNewMemory(fmt.Sprintf("memories[%d]", i), n)
		if err != nil {
			return nil, err
		}
		ms[i] = m
	}
	cond, err := fromProtoAppendCondition(req)
	if err != nil {
		return nil, err
	}
	var out []memory.Memory
	if cond.IfNoPromptAfterSeq != nil || cond.State != nil {
		out, err = s.svc.AppendMemoriesIf(ctx, req.GetMysisId(), ms, cond)
	} else {
		out, err = s.svc.AppendMemories(ctx, req.GetMysisId(), ms)
	}
	if err != nil {
		return nil, err
	}
	return &memoryv1.AppendMemoriesResponse{Memories: toProtoMemories(out)}, nil
}

// ListRecentMemories implements MemoryService.ListRecentMemories.
func (s *Server) ListRecentMemories(ctx context.Context, req *memoryv1.ListRecentMemoriesRequest) (*memoryv1.ListRecentMemoriesResponse, error) {
	out, err := s.svc.ListRecentMemories(ctx, req.GetMysisId(), int(req.GetLimit()))
	if err != nil {
		return nil, err
	}
	return &memoryv1.ListRecentMemoriesResponse{Memories: toProtoMemories(out)}, nil
}

// ListMemoriesRange implements MemoryService.ListMemoriesRange.
func (s *Server) ListMemoriesRange(ctx context.Context, req *memoryv1.ListMemoriesRangeRequest) (*memoryv1.ListMemoriesRangeResponse, error) {
	out, err := s.svc.ListMemoriesRange(ctx, req.GetMysisId(), req.GetFromSeq(), req.GetToSeq(), int(req.GetLimit()))
	if err != nil {
		return nil, err
	}
	return &memoryv1.ListMemoriesRangeResponse{Memories: toProtoMemories(out)}, nil
}

// GetMemory implements MemoryService.GetMemory.
func (s *Server) GetMemory(ctx context.Context, req *memoryv1.GetMemoryRequest) (*memoryv1.GetMemoryResponse, error) {
	m, err := s.svc.GetMemory(ctx, req.GetMysisId(), req.GetMemoryId())
	if err != nil {
		return nil, err
	}
	return &memoryv1.GetMemoryResponse{Memory: toProtoMemory(m)}, nil
}

// GetComposeWindow implements MemoryService.GetComposeWindow: the request's `append` rows are stored first (as
// AppendMemories stores them), then the window is read, then — when spend_at is set — the spend (see window_relay.go).
func (s *Server) GetComposeWindow(ctx context.Context, req *memoryv1.GetComposeWindowRequest) (*memoryv1.GetComposeWindowResponse, error) {
	relay, err := fromProtoWindowRelay(req)
	if err != nil {
		return nil, err
	}
	appended, err := s.appendForWindow(ctx, req.GetMysisId(), relay)
	if err != nil {
		return nil, err
	}
	w, err := s.svc.GetComposeWindow(ctx, fromProtoWindowQuery(req))
	if err != nil {
		return nil, err
	}
	resp := &memoryv1.GetComposeWindowResponse{
		Mysis: toProtoMysis(w.Mysis), Memories: toProtoMemories(w.Memories),
		RecentStartSeq: w.RecentStartSeq, ObjectiveSeq: w.ObjectiveSeq, TurnTruncated: w.TurnTruncated,
		Appended: appended, CarryOmitted: w.CarryOmitted, CarryCut: w.CarryCut, CarryBytes: w.CarryBytes,
		RecentOmittedThrough: w.RecentOmittedThrough, RecentBytes: w.RecentBytes,
	}
	if w.Mission != nil {
		resp.Mission = &memoryv1.Mission{Memory: toProtoMemory(w.Mission.Memory), GlobalFallback: w.Mission.GlobalFallback}
	}
	if resp.Spend, err = s.spendForWindow(ctx, req.GetMysisId(), relay); err != nil {
		return nil, err
	}
	return resp, nil
}

// RecordBroadcast implements MemoryService.RecordBroadcast.
func (s *Server) RecordBroadcast(ctx context.Context, req *memoryv1.RecordBroadcastRequest) (*memoryv1.RecordBroadcastResponse, error) {
	d, err := s.svc.RecordBroadcast(ctx, memory.Broadcast{
		ID: req.GetBroadcastId(), SenderID: req.GetSenderId(), Content: req.GetContent(),
	}, req.GetTargetMysisIds())
	if err != nil {
		return nil, err
	}
	return &memoryv1.RecordBroadcastResponse{
		Broadcast:             toProtoBroadcast(d.Broadcast),
		DeliveredCount:        int32(d.Delivered),
		AlreadyDeliveredCount: int32(d.AlreadyDelivered),
	}, nil
}

// DeliverBroadcast implements MemoryService.DeliverBroadcast.
func (s *Server) DeliverBroadcast(ctx context.Context, req *memoryv1.DeliverBroadcastRequest) (*memoryv1.DeliverBroadcastResponse, error) {
	d, err := s.svc.DeliverBroadcast(ctx, req.GetBroadcastId(), req.GetMysisIds())
	if err != nil {
		return nil, err
	}
	return &memoryv1.DeliverBroadcastResponse{
		DeliveredCount:        int32(d.Delivered),
		AlreadyDeliveredCount: int32(d.AlreadyDelivered),
		Memories:              toProtoMemories(d.Memories),
	}, nil
}

// SearchMessages implements MemoryService.SearchMessages.
func (s *Server) SearchMessages(ctx context.Context, req *memoryv1.SearchMessagesRequest) (*memoryv1.SearchMessagesResponse, error) {
	order, err := fromProtoSearchOrder(req.GetOrder())
	if err != nil {
		return nil, err
	}
	res, err := s.svc.SearchMessages(ctx, memory.SearchQuery{
		MysisID: req.GetMysisId(), Text: req.GetQuery(), Limit: int(req.GetLimit()), IncludeNudges: req.GetIncludeNudges(),
		Order: order,
	})
	if err != nil {
		return nil, err
	}
	return &memoryv1.SearchMessagesResponse{Hits: toProtoMemoryHits(res.Hits), CandidatesBounded: res.CandidatesBounded,
		Matches: res.Matches, MatchesEstimated: res.MatchesEstimated, Note: res.Note}, nil
}

// SearchReasoning implements MemoryService.SearchReasoning.
func (s *Server) SearchReasoning(ctx context.Context, req *memoryv1.SearchReasoningRequest) (*memoryv1.SearchReasoningResponse, error) {
	res, err := s.svc.SearchReasoning(ctx, memory.SearchQuery{MysisID: req.GetMysisId(), Text: req.GetQuery(), Limit: int(req.GetLimit())})
	if err != nil {
		return nil, err
	}
	return &memoryv1.SearchReasoningResponse{Hits: toProtoMemoryHits(res.Hits), Matches: res.Matches,
		MatchesEstimated: res.MatchesEstimated, Note: res.Note}, nil
}

// SearchBroadcasts implements MemoryService.SearchBroadcasts.
func (s *Server) SearchBroadcasts(ctx context.Context, req *memoryv1.SearchBroadcastsRequest) (*memoryv1.SearchBroadcastsResponse, error) {
	hs, err := s.svc.SearchBroadcasts(ctx, memory.SearchQuery{Text: req.GetQuery(), Limit: int(req.GetLimit())})
	if err != nil {
		return nil, err
	}
	return &memoryv1.SearchBroadcastsResponse{Hits: toProtoBroadcastHits(hs)}, nil
}

// CreateAccount implements MemoryService.CreateAccount.
func (s *Server) CreateAccount(ctx context.Context, req *memoryv1.CreateAccountRequest) (*memoryv1.CreateAccountResponse, error) {
	a, err := s.svc.CreateAccount(ctx, memory.Account{
		Username: req.GetUsername(), Password: req.GetPassword(), Empire: req.GetEmpire(), MysisID: req.GetMysisId(),
	})
	if err != nil {
		return nil, err
	}
	return &memoryv1.CreateAccountResponse{Account: toProtoAccount(a, false)}, nil
}

// ClaimAccount implements MemoryService.ClaimAccount.
func (s *Server) ClaimAccount(ctx context.Context, req *memoryv1.ClaimAccountRequest) (*memoryv1.ClaimAccountResponse, error) {
	a, err := s.svc.ClaimAccount(ctx, req.GetMysisId())
	if err != nil {
		return nil, err
	}
	return &memoryv1.ClaimAccountResponse{Account: toProtoAccount(a, true)}, nil
}

// GetAccountForMysis implements MemoryService.GetAccountForMysis.
func (s *Server) GetAccountForMysis(ctx context.Context, req *memoryv1.GetAccountForMysisRequest) (*memoryv1.GetAccountForMysisResponse, error) {
	a, err := s.svc.GetAccountForMysis(ctx, req.GetMysisId())
	if err != nil {
		return nil, err
	}
	return &memoryv1.GetAccountForMysisResponse{Account: toProtoAccount(a, true)}, nil
}

// ReleaseAccount implements MemoryService.ReleaseAccount.
func (s *Server) ReleaseAccount(ctx context.Context, req *memoryv1.ReleaseAccountRequest) (*memoryv1.ReleaseAccountResponse, error) {
	u, err := s.svc.ReleaseAccount(ctx, req.GetMysisId())
	if err != nil {
		return nil, err
	}
	return &memoryv1.ReleaseAccountResponse{Username: u}, nil
}
