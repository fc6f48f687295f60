package pgstore_test

import (
	"context"
	"testing"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// The conditional append: refused with ReasonPromptArrived when a direct message or broadcast came after the seq;
// allowed when only other rows came; a full retry returns the stored rows whatever arrived since; a state change
// travels in the same transaction and its expected state makes the whole call a compare-and-set.
func TestAppendMemoriesIf(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	m := mkMysis(t, s)
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{user("mine iron"), assistant("done")}))
	seen := int64(2)
	answer := assistant("final")
	answer.IdempotencyKey = "llm:2"
	// Only the model's own rows after seq 2: allowed.
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{{Role: memory.RoleUser, Source: memory.SourceNudge, Content: "go on"}}))
	got, err := s.AppendMemoriesIf(ctx, m.ID, []memory.NewMemory{answer}, memory.AppendCondition{IfNoPromptAfterSeq: &seen})
	if err != nil || len(got) != 1 || got[0].Seq != 4 {
		t.Fatalf("allowed append: %+v %v", got, err)
	}
	// A direct message at seq 5: an answer composed at seq 4 is refused, nothing written.
	must[[]memory.Memory](t)(s.AppendMemories(ctx, m.ID, []memory.NewMemory{{Role: memory.RoleUser, Source: memory.SourceDirect, Content: "new orders"}}))
	late := assistant("late")
	late.IdempotencyKey = "llm:4"
	seen = 4
	_, err = s.AppendMemoriesIf(ctx, m.ID, []memory.NewMemory{late}, memory.AppendCondition{IfNoPromptAfterSeq: &seen})
	wantKind(t, err, errs.Conflict, "")
	if errs.ReasonOf(err) != memory.ReasonPromptArrived {
		t.Fatalf("reason = %q, want %s (%v)", errs.ReasonOf(err), memory.ReasonPromptArrived, err)
	}
	if cur := must[memory.Mysis](t)(s.GetMysis(ctx, m.ID)); cur.LastSeq != 5 {
		t.Fatalf("a refused append wrote rows: last seq %d", cur.LastSeq)
	}
	// A retry of the append that succeeded returns the stored row although a prompt arrived since.
	seen = 2
	got, err = s.AppendMemoriesIf(ctx, m.ID, []memory.NewMemory{answer}, memory.AppendCondition{IfNoPromptAfterSeq: &seen})
	if err != nil || len(got) != 1 || got[0].Seq != 4 {
		t.Fatalf("retry: %+v %v", got, err)
	}

	// Nudge and count in one call, as a compare-and-set on the state.
	must[memory.Mysis](t)(func() (memory.Mysis, error) {
		y, _, err := s.SetMysisState(ctx, m.ID, memory.StateChange{State: memory.StateRunning})
		return y, err
	}())
	one := int32(1)
	nudge := memory.NewMemory{Role: memory.RoleUser, Source: memory.SourceNudge, Content: "continue", IdempotencyKey: "nudge:3"}
	seen = 5
	sc := &memory.StateChange{State: memory.StateRunning, Reason: "r", EncouragementCount: &one, Expected: memory.StateRunning}
	got, err = s.AppendMemoriesIf(ctx, m.ID, []memory.NewMemory{nudge}, memory.AppendCondition{IfNoPromptAfterSeq: &seen, State: sc})
	if err != nil || len(got) != 1 || got[0].Seq != 6 {
		t.Fatalf("nudge with count: %+v %v", got, err)
	}
	if cur := must[memory.Mysis](t)(s.GetMysis(ctx, m.ID)); cur.EncouragementCount != 1 || cur.State != memory.StateRunning {
		t.Fatalf("count not stored with the nudge: %+v", cur)
	}
	// Stopped meanwhile: the next nudge and its count are refused together.
	must[memory.Mysis](t)(func() (memory.Mysis, error) {
		y, _, err := s.SetMysisState(ctx, m.ID, memory.StateChange{State: memory.StateStopped})
		return y, err
	}())
	two := int32(2)
	nudge2 := memory.NewMemory{Role: memory.RoleUser, Source: memory.SourceNudge, Content: "continue", IdempotencyKey: "nudge:4"}
	sc2 := &memory.StateChange{State: memory.StateRunning, EncouragementCount: &two, Expected: memory.StateRunning}
	_, err = s.AppendMemoriesIf(ctx, m.ID, []memory.NewMemory{nudge2}, memory.AppendCondition{State: sc2})
	wantKind(t, err, errs.Conflict, "")
	if errs.ReasonOf(err) == memory.ReasonPromptArrived {
		t.Fatal("a state conflict reported as PROMPT_ARRIVED")
	}
	if cur := must[memory.Mysis](t)(s.GetMysis(ctx, m.ID)); cur.EncouragementCount != 1 || cur.State != memory.StateStopped || cur.LastSeq != 6 {
		t.Fatalf("a refused compare-and-set changed the mysis: %+v", cur)
	}
	// Bad input naming its field is the Service's (memory.TestServiceRejectsBadInputNamingTheField).
}
