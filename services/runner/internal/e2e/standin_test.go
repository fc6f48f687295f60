package e2e

import (
	"context"
	"net"
	"testing"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/server"
)

// standinComposer is a deliberately simple ComposerService used only while services/composer/cmd/composer does not
// exist yet, so the rest of the stack (memory, bus, NATS, simulator, leases) is exercised end to end. It follows the
// encouragement contract of docs/COMPOSITION.md and sends the window from its first prompt on, without compression.
type standinComposer struct {
	composerv1.UnimplementedComposerServiceServer
	memory memoryv1.MemoryServiceClient
}

func startStandinComposer(t *testing.T, memAddr string) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Options{Name: "standin-composer"})
	srv.Register(&composerv1.ComposerService_ServiceDesc, &standinComposer{memory: memoryv1.NewMemoryServiceClient(dial(t, memAddr))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx, lis); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return lis.Addr().String()
}

var nudges = []string{
	"Continue your mission. Check notifications and coordinate with the swarm.",
	"You need to respond. Check your notifications and status.",
	"URGENT: Respond immediately. Check your system status.",
}

func (c *standinComposer) ComposeContext(ctx context.Context, req *composerv1.ComposeContextRequest) (*composerv1.ComposeContextResponse, error) {
	w, err := c.memory.GetComposeWindow(ctx, &memoryv1.GetComposeWindowRequest{MysisId: req.GetMysisId(), Window: 40, GlobalMissionFallback: true})
	if err != nil {
		return nil, err
	}
	ms := w.GetMemories()
	m := w.GetMysis()
	out := &composerv1.ComposeContextResponse{Manifest: &composerv1.Manifest{}, Encouragement: &composerv1.Encouragement{
		Action: composerv1.EncouragementAction_ENCOURAGEMENT_ACTION_NONE, NextCount: m.GetEncouragementCount()}}
	for _, mem := range ms {
		out.Manifest.Entries = append(out.Manifest.Entries, &composerv1.ManifestEntry{MemoryId: mem.GetId(), Seq: mem.GetSeq(), Disposition: composerv1.Disposition_DISPOSITION_INCLUDED})
	}
	// The newest turn: from the last user memory on.
	start := -1
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].GetRole() == memoryv1.Role_ROLE_USER {
			start = i
			break
		}
	}
	answered := start >= 0 && len(ms) > 0 && ms[len(ms)-1].GetRole() == memoryv1.Role_ROLE_ASSISTANT && len(ms[len(ms)-1].GetToolCalls()) == 0
	commander := start >= 0 && (ms[start].GetSource() == memoryv1.Source_SOURCE_DIRECT || ms[start].GetSource() == memoryv1.Source_SOURCE_BROADCAST)
	msgs := []*composerv1.ChatMessage{{Role: memoryv1.Role_ROLE_SYSTEM, Content: m.GetSystemPrompt()}}
	if start >= 0 {
		for _, mem := range ms[start:] {
			msgs = append(msgs, &composerv1.ChatMessage{Role: mem.GetRole(), Content: mem.GetContent(), ToolCalls: mem.GetToolCalls(), ToolCallId: mem.GetToolCallId(), Name: mem.GetToolName()})
		}
	}
	enc := out.Encouragement
	switch {
	case req.GetBeginAutonomousTurn() && commander && !answered:
		enc.Action, enc.NextCount = composerv1.EncouragementAction_ENCOURAGEMENT_ACTION_RESET, 0
	case req.GetBeginAutonomousTurn() && w.GetMission() != nil:
		enc.Action, enc.NextCount, enc.Nudge = composerv1.EncouragementAction_ENCOURAGEMENT_ACTION_RESET, 0, nudges[0]
	case req.GetBeginAutonomousTurn() && m.GetEncouragementCount() >= 3:
		enc.Action = composerv1.EncouragementAction_ENCOURAGEMENT_ACTION_IDLE
		return out, nil
	case req.GetBeginAutonomousTurn():
		enc.Action, enc.NextCount = composerv1.EncouragementAction_ENCOURAGEMENT_ACTION_INCREMENT, m.GetEncouragementCount()+1
		enc.Nudge = nudges[enc.NextCount-1]
	case commander:
		enc.Action, enc.NextCount = composerv1.EncouragementAction_ENCOURAGEMENT_ACTION_RESET, 0
	}
	if enc.Nudge != "" {
		msgs = []*composerv1.ChatMessage{msgs[0]}
		if mis := w.GetMission(); mis != nil {
			msgs = append(msgs, &composerv1.ChatMessage{Role: memoryv1.Role_ROLE_USER, Content: mis.GetMemory().GetContent() + "\n\n" + enc.Nudge})
		} else {
			msgs = append(msgs, &composerv1.ChatMessage{Role: memoryv1.Role_ROLE_USER, Content: enc.Nudge})
		}
	} else if start < 0 {
		msgs = append(msgs, &composerv1.ChatMessage{Role: memoryv1.Role_ROLE_USER, Content: nudges[0]})
	}
	out.Messages = msgs
	return out, nil
}
