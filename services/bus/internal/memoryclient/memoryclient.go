// Package memoryclient is the bus's adapter to the memory service: it implements delivery.Memory and
// send.Directory over the zoea.memory.v1 gRPC client, turning requests into domain values and gRPC statuses into
// libs/errs errors, so the delivery rules and the API's operations never see protobuf or gRPC.
package memoryclient

import (
	"context"
	"fmt"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/server"
	"github.com/zoeaswarm/zoea/services/bus/internal/delivery"
	"github.com/zoeaswarm/zoea/services/bus/internal/message"
	"github.com/zoeaswarm/zoea/services/bus/internal/send"
)

// listPageSize is the memory service's largest ListMyses page.
const listPageSize = 1000

// Client writes deliveries through a memory service client.
type Client struct {
	api memoryv1.MemoryServiceClient
}

var (
	_ delivery.Memory = (*Client)(nil)
	_ send.Directory  = (*Client)(nil)
)

// New wraps api.
func New(api memoryv1.MemoryServiceClient) *Client { return &Client{api: api} }

// Mysis returns the mysis with this id (errs.NotFound when there is none).
func (c *Client) Mysis(ctx context.Context, id string) (send.Mysis, error) {
	resp, err := c.api.GetMysis(ctx, &memoryv1.GetMysisRequest{MysisId: id})
	if err != nil {
		return send.Mysis{}, server.FromStatus(err)
	}
	return send.Mysis{ID: resp.GetMysis().GetId(), Name: resp.GetMysis().GetName()}, nil
}

// MysisByName returns the mysis with this name (errs.NotFound when there is none).
func (c *Client) MysisByName(ctx context.Context, name string) (send.Mysis, error) {
	resp, err := c.api.GetMysisByName(ctx, &memoryv1.GetMysisByNameRequest{Name: name})
	if err != nil {
		return send.Mysis{}, server.FromStatus(err)
	}
	return send.Mysis{ID: resp.GetMysis().GetId(), Name: resp.GetMysis().GetName()}, nil
}

// MysisIDs lists every mysis, all pages.
func (c *Client) MysisIDs(ctx context.Context) ([]string, error) {
	var ids []string
	token := ""
	for {
		resp, err := c.api.ListMyses(ctx, &memoryv1.ListMysesRequest{PageSize: listPageSize, PageToken: token})
		if err != nil {
			return nil, server.FromStatus(err)
		}
		for _, m := range resp.GetMyses() {
			ids = append(ids, m.GetId())
		}
		if token = resp.GetNextPageToken(); token == "" {
			return ids, nil
		}
	}
}

// RecordBroadcast stores b once and delivers it into every mysis's memory but its sender's; written counts the rows
// this call wrote, already the myses that had it.
func (c *Client) RecordBroadcast(ctx context.Context, b message.Broadcast) (written, already int, err error) {
	resp, err := c.api.RecordBroadcast(ctx, &memoryv1.RecordBroadcastRequest{BroadcastId: b.ID, SenderId: b.SenderID, Content: b.Content})
	if err != nil {
		return 0, 0, server.FromStatus(err)
	}
	return int(resp.GetDeliveredCount()), int(resp.GetAlreadyDeliveredCount()), nil
}

// AppendDirect appends d to its mysis's memory (role user, source direct) under its idempotency key and returns the
// row stored for that key.
func (c *Client) AppendDirect(ctx context.Context, d message.Direct) (message.Stored, error) {
	resp, err := c.api.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: d.MysisID, Memories: []*memoryv1.NewMemory{{
		Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_DIRECT, SenderId: d.SenderID,
		Content: d.Content, IdempotencyKey: d.IdempotencyKey(),
	}}})
	if err != nil {
		return message.Stored{}, server.FromStatus(err)
	}
	if len(resp.GetMemories()) != 1 {
		return message.Stored{}, fmt.Errorf("memory service returned %d rows for 1", len(resp.GetMemories()))
	}
	return fromProtoMemory(resp.GetMemories()[0]), nil
}

func fromProtoMemory(m *memoryv1.Memory) message.Stored {
	return message.Stored{
		ID: m.GetId(), Seq: m.GetSeq(), Turn: m.GetTurn(), MysisID: m.GetMysisId(), SenderID: m.GetSenderId(),
		Content: m.GetContent(), IdempotencyKey: m.GetIdempotencyKey(), CreatedAt: m.GetCreatedAt().AsTime(),
	}
}
