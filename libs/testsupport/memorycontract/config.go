package memorycontract

import (
	"testing"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	"github.com/zoeaswarm/zoea/libs/memoryrules"
)

// The Config capability: UpdateMysisConfig and DeleteMysis as the real service answers them
// (services/memory/internal/memory ConfigPatch.Apply and validateConfig, pgstore UpdateMysisConfig/DeleteMysis).
//
// UpdateMysisConfig changes only the fields that are set, validates the resulting configuration as a whole the way
// CreateMysis does (provider an identifier, temperature 0–2, a non-blank system prompt) and changes nothing when it
// refuses. DeleteMysis removes the mysis and its memories: its id and name are unknown afterwards and the name is
// free for a new mysis.

func testUpdateConfig(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	m := newMysis(t, c, uniqueName("config"))
	resp, err := c.UpdateMysisConfig(ctx, &memoryv1.UpdateMysisConfigRequest{MysisId: m.GetId(), Temperature: proto.Float64(0.3)})
	if err != nil {
		t.Fatal(err)
	}
	got := resp.GetMysis()
	if got.GetId() != m.GetId() || got.GetTemperature() != 0.3 || got.GetProvider() != memoryrules.AutopilotProvider || got.GetModel() != m.GetModel() ||
		got.GetSystemPrompt() != m.GetSystemPrompt() || got.GetName() != m.GetName() {
		t.Errorf("temperature only: %v; want the temperature changed and nothing else", got)
	}
	resp, err = c.UpdateMysisConfig(ctx, &memoryv1.UpdateMysisConfigRequest{MysisId: m.GetId(),
		Provider: proto.String("ollama"), Model: proto.String("qwen3:8b"), SystemPrompt: proto.String("You mine ore.")})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetMysis(); got.GetProvider() != "ollama" || got.GetModel() != "qwen3:8b" || got.GetSystemPrompt() != "You mine ore." || got.GetTemperature() != 0.3 {
		t.Errorf("provider, model and prompt: %v; want them changed and the temperature kept", got)
	}
	stored, err := c.GetMysis(ctx, &memoryv1.GetMysisRequest{MysisId: m.GetId()})
	if err != nil || stored.GetMysis().GetProvider() != "ollama" || stored.GetMysis().GetModel() != "qwen3:8b" || stored.GetMysis().GetTemperature() != 0.3 {
		t.Errorf("GetMysis after the updates = %v, %v", stored.GetMysis(), err)
	}
	if stored.GetMysis().GetState() != memoryv1.MysisState_MYSIS_STATE_IDLE {
		t.Errorf("a configuration change changed the state to %v", stored.GetMysis().GetState())
	}
	// Nothing set: the configuration is unchanged.
	resp, err = c.UpdateMysisConfig(ctx, &memoryv1.UpdateMysisConfigRequest{MysisId: m.GetId()})
	if err != nil || resp.GetMysis().GetProvider() != "ollama" || resp.GetMysis().GetModel() != "qwen3:8b" {
		t.Errorf("an empty update = %v, %v; want the mysis unchanged", resp.GetMysis(), err)
	}
	// The SpaceMolt endpoint (issue 29): set per mysis, kept by other updates, "" back to the swarm's.
	if m.GetSpacemoltEndpoint() != "" {
		t.Errorf("a new mysis plays endpoint %q, want the swarm's (\"\")", m.GetSpacemoltEndpoint())
	}
	for _, step := range []struct {
		set  *string
		want string
	}{{proto.String("v2"), "v2"}, {nil, "v2"}, {proto.String("v1"), "v1"}, {proto.String(""), ""}} {
		resp, err = c.UpdateMysisConfig(ctx, &memoryv1.UpdateMysisConfigRequest{MysisId: m.GetId(), SpacemoltEndpoint: step.set, Temperature: proto.Float64(0.4)})
		if err != nil || resp.GetMysis().GetSpacemoltEndpoint() != step.want {
			t.Errorf("update endpoint %v = %v, %v; want %q", step.set, resp.GetMysis(), err, step.want)
		}
	}
	created, err := c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{Name: uniqueName("v2"), Provider: memoryrules.AutopilotProvider, SystemPrompt: "You mine.", SpacemoltEndpoint: "v2"})
	if err != nil || created.GetMysis().GetSpacemoltEndpoint() != "v2" {
		t.Fatalf("create on v2 = %v, %v", created.GetMysis(), err)
	}
	stored, err = c.GetMysis(ctx, &memoryv1.GetMysisRequest{MysisId: created.GetMysis().GetId()})
	if err != nil || stored.GetMysis().GetSpacemoltEndpoint() != "v2" {
		t.Errorf("GetMysis of a mysis created on v2 = %v, %v", stored.GetMysis(), err)
	}
}

func testUpdateConfigRejects(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	m := newMysis(t, c, uniqueName("cfgbad"))
	update := func(r *memoryv1.UpdateMysisConfigRequest) error {
		if r.MysisId == "" {
			r.MysisId = m.GetId()
		}
		_, err := c.UpdateMysisConfig(ctx, r)
		return err
	}
	wantInvalid(t, "a temperature above 2", update(&memoryv1.UpdateMysisConfigRequest{Temperature: proto.Float64(2.5)}), "temperature")
	wantInvalid(t, "a negative temperature", update(&memoryv1.UpdateMysisConfigRequest{Temperature: proto.Float64(-0.1)}), "temperature")
	wantInvalid(t, "a blank system prompt", update(&memoryv1.UpdateMysisConfigRequest{SystemPrompt: proto.String("  \n")}), "system_prompt")
	wantInvalid(t, "an empty provider", update(&memoryv1.UpdateMysisConfigRequest{Provider: proto.String("")}), "provider")
	wantInvalid(t, "a provider that is no identifier", update(&memoryv1.UpdateMysisConfigRequest{Provider: proto.String("Open AI")}), "provider")
	wantInvalid(t, "a NUL byte in the model", update(&memoryv1.UpdateMysisConfigRequest{Model: proto.String("a\x00b")}), "model")
	wantInvalid(t, "an unknown endpoint", update(&memoryv1.UpdateMysisConfigRequest{SpacemoltEndpoint: proto.String("v3")}), "spacemolt_endpoint")
	wantInvalid(t, "an endpoint URL", update(&memoryv1.UpdateMysisConfigRequest{SpacemoltEndpoint: proto.String("http://game/mcp/v2")}), "spacemolt_endpoint")
	_, err := c.CreateMysis(ctx, &memoryv1.CreateMysisRequest{Name: uniqueName("bad"), Provider: memoryrules.AutopilotProvider, SystemPrompt: "x", SpacemoltEndpoint: "V2"})
	wantInvalid(t, "create with an unknown endpoint", err, "spacemolt_endpoint")
	// A refused update changes nothing, not even its valid fields.
	wantInvalid(t, "a valid model with a bad temperature",
		update(&memoryv1.UpdateMysisConfigRequest{Model: proto.String("other"), Temperature: proto.Float64(9)}), "temperature")
	got, err := c.GetMysis(ctx, &memoryv1.GetMysisRequest{MysisId: m.GetId()})
	if err != nil || !proto.Equal(configOf(got.GetMysis()), configOf(m)) {
		t.Errorf("after refused updates: %v, %v; want the configuration it was created with", got.GetMysis(), err)
	}
	wantInvalid(t, "a malformed mysis id", update(&memoryv1.UpdateMysisConfigRequest{MysisId: "nope", Temperature: proto.Float64(1)}), "mysis_id")
	wantCode(t, "an unknown mysis", update(&memoryv1.UpdateMysisConfigRequest{MysisId: uuid.NewString(), Temperature: proto.Float64(1)}), codes.NotFound)
}

// configOf is the configuration part of a mysis.
func configOf(m *memoryv1.Mysis) *memoryv1.Mysis {
	return &memoryv1.Mysis{Provider: m.GetProvider(), Model: m.GetModel(), Temperature: m.GetTemperature(), SystemPrompt: m.GetSystemPrompt(),
		SpacemoltEndpoint: m.GetSpacemoltEndpoint()}
}

func testDeleteMysis(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	name := uniqueName("delete")
	m := newMysis(t, c, name)
	appendOK(t, c, m.GetId(), userMemory("Mine iron ore.", "k1"), userMemory("Then sell it.", ""))
	keep := newMysis(t, c, uniqueName("delete"))
	appendOK(t, c, keep.GetId(), userMemory("Stay.", ""))

	if _, err := c.DeleteMysis(ctx, &memoryv1.DeleteMysisRequest{MysisId: m.GetId()}); err != nil {
		t.Fatal(err)
	}
	_, err := c.GetMysis(ctx, &memoryv1.GetMysisRequest{MysisId: m.GetId()})
	wantCode(t, "GetMysis of a deleted mysis", err, codes.NotFound)
	_, err = c.GetMysisByName(ctx, &memoryv1.GetMysisByNameRequest{Name: name})
	wantCode(t, "GetMysisByName of a deleted mysis", err, codes.NotFound)
	_, err = c.ListRecentMemories(ctx, &memoryv1.ListRecentMemoriesRequest{MysisId: m.GetId()})
	wantCode(t, "the memories of a deleted mysis", err, codes.NotFound)
	_, err = c.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: m.GetId(), Memories: []*memoryv1.NewMemory{userMemory("late", "")}})
	wantCode(t, "an append to a deleted mysis", err, codes.NotFound)
	_, err = c.DeleteMysis(ctx, &memoryv1.DeleteMysisRequest{MysisId: m.GetId()})
	wantCode(t, "a second delete", err, codes.NotFound)

	// The name is free again, for a new mysis with its own id and an empty history (the old idempotency key is
	// gone with the old rows).
	again := newMysis(t, c, name)
	if again.GetId() == m.GetId() || again.GetLastSeq() != 0 {
		t.Errorf("a new mysis under a deleted name = %v", again)
	}
	if r := appendOK(t, c, again.GetId(), userMemory("Mine iron ore.", "k1")); r[0].GetSeq() != 1 {
		t.Errorf("first row of the new mysis: seq %d, want 1", r[0].GetSeq())
	}
	// Other myses are untouched.
	rest, err := c.ListRecentMemories(ctx, &memoryv1.ListRecentMemoriesRequest{MysisId: keep.GetId()})
	if err != nil || len(rest.GetMemories()) != 1 {
		t.Errorf("another mysis's memories after a delete = %v, %v", rest.GetMemories(), err)
	}
}

func testDeleteRejects(t *testing.T, c memoryv1.MemoryServiceClient) {
	ctx := ctxT(t)
	_, err := c.DeleteMysis(ctx, &memoryv1.DeleteMysisRequest{MysisId: "nope"})
	wantInvalid(t, "a malformed mysis id", err, "mysis_id")
	_, err = c.DeleteMysis(ctx, &memoryv1.DeleteMysisRequest{})
	wantInvalid(t, "no mysis id", err, "mysis_id")
	_, err = c.DeleteMysis(ctx, &memoryv1.DeleteMysisRequest{MysisId: uuid.NewString()})
	wantCode(t, "an unknown mysis", err, codes.NotFound)
}
