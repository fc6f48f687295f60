package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
	"github.com/zoeaswarm/zoea/services/memory/internal/pgstore"
)

// groupProbe is a store whose append groups report themselves and wait for a token before their transaction, so a
// test decides which calls share a group: it holds every group slot with a leader, queues the calls it wants in
// one group, and releases.
type groupProbe struct {
	*svcStore
	queued  chan int      // the queue's length after each call joined it
	groups  chan []string // each group's myses, before its transaction
	leaders sync.Map      // leader mysis id → a channel its group waits for
	proceed chan struct{} // every other group waits until it is closed
}

func newGroupProbe(t *testing.T) *groupProbe {
	g := &groupProbe{queued: make(chan int, 1000), groups: make(chan []string, 1000), proceed: make(chan struct{})}
	g.svcStore = newSvcStore(pool(t), testBox(t), pgstore.WithGroupHooks(
		func(n int) { g.queued <- n },
		func(myses []string) {
			g.groups <- myses
			if gate, ok := g.leaders.Load(myses[0]); ok {
				<-gate.(chan struct{})
				return
			}
			<-g.proceed
		}))
	return g
}

type appendOutcome struct {
	out []memory.Memory
	err error
}

// start runs an append in the background; its outcome arrives on the returned channel.
func start(f func() ([]memory.Memory, error)) chan appendOutcome {
	c := make(chan appendOutcome, 1)
	go func() {
		out, err := f()
		c <- appendOutcome{out, err}
	}()
	return c
}

// holdSlots starts one leader append per group slot and waits until each is held in its group hook; every later
// call queues. It returns the leaders' outcomes and the function that lets them go on.
func (g *groupProbe) holdSlots(t *testing.T, ctx context.Context) ([]chan appendOutcome, func()) {
	t.Helper()
	var leaders []chan appendOutcome
	var gates []chan struct{}
	for range pgstore.MaxGroupsInFlight {
		m := mkMysis(t, g.svcStore)
		gate := make(chan struct{})
		gates = append(gates, gate)
		g.leaders.Store(m.ID, gate)
		leaders = append(leaders, start(func() ([]memory.Memory, error) {
			return g.AppendMemories(ctx, m.ID, []memory.NewMemory{user("leader")})
		}))
		if got := <-g.groups; len(got) != 1 || got[0] != m.ID {
			t.Fatalf("a leader on an idle committer ran in group %v", got)
		}
	}
	return leaders, func() {
		for _, gate := range gates {
			close(gate)
		}
	}
}

// waitQueued waits until n calls are queued.
func (g *groupProbe) waitQueued(t *testing.T, n int) {
	t.Helper()
	for {
		select {
		case q := <-g.queued:
			if q == n {
				return
			}
		case <-time.After(stuck):
			t.Fatalf("%d calls never queued", n)
		}
	}
}

// waitGroupOf waits for a group of exactly the given myses (in any order).
func (g *groupProbe) waitGroupOf(t *testing.T, ids ...string) {
	t.Helper()
	want := slices.Sorted(slices.Values(ids))
	var seen [][]string
	for {
		select {
		case got := <-g.groups:
			if slices.Equal(slices.Sorted(slices.Values(got)), want) {
				return
			}
			seen = append(seen, got)
		case <-time.After(stuck):
			t.Fatalf("no group of %v ran; groups seen: %v", ids, seen)
		}
	}
}

// stuck is how long a probe waits for an event before it fails the test instead of hanging: a guard, not a
// synchronisation (every wait ends on its event).
const stuck = 30 * time.Second

func ok(t *testing.T, c chan appendOutcome) []memory.Memory {
	t.Helper()
	r := <-c
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.out
}

// Calls queued while every group slot is busy run as one group, and each gets its own outcome: plain appends,
// a partial retry (stored rows come back, new ones follow), LLM-call accounting, a passing conditional append
// with a state change, a condition refused for a prompt, a compare-and-set refused for the state, an unknown
// mysis. A second call of a mysis already in the group waits for a later group.
func TestGroupCommitGivesEachCallItsOwnOutcome(t *testing.T) {
	ctx := context.Background()
	plain := newStore(t)
	g := newGroupProbe(t)
	b, c, d, e, f, h := mkMysis(t, plain), mkMysis(t, plain), mkMysis(t, plain), mkMysis(t, plain), mkMysis(t, plain), mkMysis(t, plain)
	stored := must[[]memory.Memory](t)(plain.AppendMemories(ctx, f.ID, []memory.NewMemory{
		{Role: memory.RoleUser, Source: memory.SourceDirect, Content: "f1", IdempotencyKey: "f1"}}))
	must[[]memory.Memory](t)(plain.AppendMemories(ctx, d.ID, []memory.NewMemory{
		{Role: memory.RoleUser, Source: memory.SourceDirect, Content: "new orders"}}))
	if _, _, err := plain.SetMysisState(ctx, c.ID, memory.StateChange{State: memory.StateStopped}); err != nil {
		t.Fatal(err)
	}
	unknown := memory.NewID()

	leaders, release := g.holdSlots(t, ctx)
	zero := int64(0)
	running := &memory.StateChange{State: memory.StateRunning, Reason: "go", Expected: memory.StateIdle}
	withCall := assistant("priced")
	withCall.LlmCall = call(memory.NewID(), time.Now(), 100, 0, 10, 7)
	queue := []func() ([]memory.Memory, error){
		func() ([]memory.Memory, error) {
			return g.AppendMemories(ctx, b.ID, []memory.NewMemory{user("b1"), assistant("b2")})
		},
		func() ([]memory.Memory, error) {
			return g.AppendMemoriesIf(ctx, c.ID, []memory.NewMemory{user("c1")}, memory.AppendCondition{State: running})
		},
		func() ([]memory.Memory, error) {
			return g.AppendMemoriesIf(ctx, d.ID, []memory.NewMemory{assistant("late")}, memory.AppendCondition{IfNoPromptAfterSeq: &zero})
		},
		func() ([]memory.Memory, error) { return g.AppendMemories(ctx, e.ID, []memory.NewMemory{withCall}) },
		func() ([]memory.Memory, error) {
			return g.AppendMemories(ctx, f.ID, []memory.NewMemory{
				{Role: memory.RoleUser, Source: memory.SourceDirect, Content: "f1", IdempotencyKey: "f1"},
				{Role: memory.RoleAssistant, Source: memory.SourceLLM, Content: "f2", IdempotencyKey: "f2"}})
		},
		func() ([]memory.Memory, error) {
			return g.AppendMemoriesIf(ctx, h.ID, []memory.NewMemory{user("h1")}, memory.AppendCondition{IfNoPromptAfterSeq: &zero, State: running})
		},
		func() ([]memory.Memory, error) {
			return g.AppendMemories(ctx, unknown, []memory.NewMemory{user("nobody")})
		},
	}
	var res []chan appendOutcome
	for i, q := range queue {
		res = append(res, start(q))
		g.waitQueued(t, i+1)
	}
	b2 := start(func() ([]memory.Memory, error) { return g.AppendMemories(ctx, b.ID, []memory.NewMemory{user("b3")}) })
	g.waitQueued(t, len(queue)+1)
	release()
	close(g.proceed)
	g.waitGroupOf(t, b.ID, c.ID, d.ID, e.ID, f.ID, h.ID, unknown)
	for _, l := range leaders {
		ok(t, l)
	}

	// b's two calls ran in different transactions, in either order (they were concurrent).
	first, second := ok(t, res[0]), ok(t, b2)
	wantSecond := map[int64]int64{1: 3, 2: 1}[first[0].Seq]
	if first[1].Seq != first[0].Seq+1 || first[0].ID == 0 || first[1].CreatedAt.IsZero() || second[0].Seq != wantSecond {
		t.Fatalf("b: %+v and %+v", first, second)
	}
	r := <-res[1]
	wantKind(t, r.err, errs.Conflict, "")
	if errs.ReasonOf(r.err) == memory.ReasonPromptArrived {
		t.Fatalf("c: a state conflict reported as a prompt: %v", r.err)
	}
	r = <-res[2]
	wantKind(t, r.err, errs.Conflict, "")
	if errs.ReasonOf(r.err) != memory.ReasonPromptArrived {
		t.Fatalf("d: %v", r.err)
	}
	if out := ok(t, res[3]); out[0].Seq != 1 {
		t.Fatalf("e: %+v", out)
	}
	if out := ok(t, res[4]); out[0].ID != stored[0].ID || out[0].Seq != 1 || out[1].Seq != 2 {
		t.Fatalf("f (partial retry): %+v, stored first %+v", out, stored[0])
	}
	if out := ok(t, res[5]); out[0].Seq != 1 {
		t.Fatalf("h: %+v", out)
	}
	r = <-res[6]
	wantKind(t, r.err, errs.NotFound, "")

	for _, w := range []struct {
		id        string
		last      int64
		state     memory.State
		stateWhy  string
		rowsCount int
	}{{b.ID, 3, memory.StateIdle, "", 3}, {c.ID, 0, memory.StateStopped, "", 0}, {d.ID, 1, memory.StateIdle, "", 1},
		{e.ID, 1, memory.StateIdle, "", 1}, {f.ID, 2, memory.StateIdle, "", 2}, {h.ID, 1, memory.StateRunning, "go", 1}} {
		y := must[memory.Mysis](t)(plain.GetMysis(ctx, w.id))
		rows := must[[]memory.Memory](t)(plain.ListMemoriesRange(ctx, w.id, 1, 0, 100))
		if y.LastSeq != w.last || y.State != w.state || len(rows) != w.rowsCount || (w.stateWhy != "" && y.StateReason != w.stateWhy) {
			t.Fatalf("mysis %s: last seq %d state %s (%q), %d rows; want %d %s, %d rows", w.id, y.LastSeq, y.State, y.StateReason, len(rows), w.last, w.state, w.rowsCount)
		}
	}
	u := must[memory.Usage](t)(plain.GetUsage(ctx, memory.UsageQuery{MysisIDs: []string{e.ID}}))
	if u.Total.Calls != 1 || u.Total.PromptTokens != 100 {
		t.Fatalf("e's LLM call: %+v", u.Total)
	}
}

// A group the database refuses (a role the Service would have rejected breaks the table's CHECK constraint) runs
// again call by call: the bad call fails alone, its neighbours commit.
func TestGroupCommitFallsBackCallByCall(t *testing.T) {
	ctx := context.Background()
	g := newGroupProbe(t)
	x, y, z := mkMysis(t, g.svcStore), mkMysis(t, g.svcStore), mkMysis(t, g.svcStore)
	leaders, release := g.holdSlots(t, ctx)
	good1 := start(func() ([]memory.Memory, error) {
		return g.AppendMemories(ctx, x.ID, []memory.NewMemory{user("x1"), assistant("x2")})
	})
	g.waitQueued(t, 1)
	bad := start(func() ([]memory.Memory, error) { // the Store alone: no Service to validate the role
		return g.Store.AppendMemories(ctx, y.ID, []memory.NewMemory{{Role: memory.Role(9), Source: memory.SourceDirect, Content: "bad"}})
	})
	g.waitQueued(t, 2)
	good2 := start(func() ([]memory.Memory, error) { return g.AppendMemories(ctx, z.ID, []memory.NewMemory{user("z1")}) })
	g.waitQueued(t, 3)
	release()
	close(g.proceed)
	g.waitGroupOf(t, x.ID, y.ID, z.ID)
	// Then each call alone.
	g.waitGroupOf(t, x.ID)
	g.waitGroupOf(t, y.ID)
	g.waitGroupOf(t, z.ID)
	for _, l := range leaders {
		ok(t, l)
	}
	if out := ok(t, good1); out[0].Seq != 1 || out[1].Seq != 2 {
		t.Fatalf("x: %+v", out)
	}
	if out := ok(t, good2); out[0].Seq != 1 {
		t.Fatalf("z: %+v", out)
	}
	if r := <-bad; r.err == nil {
		t.Fatalf("a row breaking the role CHECK was stored: %+v", r.out)
	}
	if m := must[memory.Mysis](t)(g.GetMysis(ctx, y.ID)); m.LastSeq != 0 {
		t.Fatalf("the refused call advanced its mysis: %+v", m)
	}
}

// A queued caller that gives up is withdrawn and writes nothing; a caller whose group is already running returns
// at once when it gives up, and the group commits for the others (its own rows too: as with a call cancelled
// during its COMMIT, a retry with the same keys finds them).
func TestGroupCommitCancelledWaiters(t *testing.T) {
	ctx := context.Background()
	g := newGroupProbe(t)
	w1, w2, m := mkMysis(t, g.svcStore), mkMysis(t, g.svcStore), mkMysis(t, g.svcStore)
	leaders, release := g.holdSlots(t, ctx)
	ctx1, cancel1 := context.WithCancel(ctx)
	ctx2, cancel2 := context.WithCancel(ctx)
	defer cancel2()
	r1 := start(func() ([]memory.Memory, error) { return g.AppendMemories(ctx1, w1.ID, []memory.NewMemory{user("w1")}) })
	g.waitQueued(t, 1)
	keyed := memory.NewMemory{Role: memory.RoleUser, Source: memory.SourceDirect, Content: "w2", IdempotencyKey: "w2"}
	r2 := start(func() ([]memory.Memory, error) { return g.AppendMemories(ctx2, w2.ID, []memory.NewMemory{keyed}) })
	g.waitQueued(t, 2)
	rm := start(func() ([]memory.Memory, error) { return g.AppendMemories(ctx, m.ID, []memory.NewMemory{user("m")}) })
	g.waitQueued(t, 3)

	cancel1()
	if r := <-r1; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("a queued caller that gave up: %+v %v", r.out, r.err)
	}
	release()
	g.waitGroupOf(t, w2.ID, m.ID) // w1 was withdrawn
	// The group waits in its hook: w2 gives up meanwhile and returns without waiting for it.
	cancel2()
	if r := <-r2; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("a caller that gave up inside a running group: %+v %v", r.out, r.err)
	}
	close(g.proceed)
	for _, l := range leaders {
		ok(t, l)
	}
	if out := ok(t, rm); out[0].Seq != 1 {
		t.Fatalf("m: %+v", out)
	}
	// The group committed as one: no call had to run again alone.
	if n := len(g.groups); n != 0 {
		t.Fatalf("%d more groups ran (%v): the cancelled member broke its group", n, <-g.groups)
	}
	if y := must[memory.Mysis](t)(g.GetMysis(ctx, w1.ID)); y.LastSeq != 0 {
		t.Fatalf("a withdrawn call wrote rows: %+v", y)
	}
	again := must[[]memory.Memory](t)(g.AppendMemories(ctx, w2.ID, []memory.NewMemory{keyed}))
	if again[0].Seq != 1 || must[memory.Mysis](t)(g.GetMysis(ctx, w2.ID)).LastSeq != 1 {
		t.Fatalf("w2's retry: %+v", again)
	}
}

// Many concurrent appenders over many myses, a few of them shared by several appenders, with retries (some of
// them concurrent with the original call): every mysis's seq is gapless from 1, every key is stored exactly once,
// and every caller got the rows that were stored.
func TestGroupCommitUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	const appenders, calls, own, shared = 24, 30, 24, 3
	var myses []string
	for range own + shared {
		myses = append(myses, mkMysis(t, s).ID)
	}
	type stored struct {
		mysis string
		id    int64
		seq   int64
	}
	var mu sync.Mutex
	byKey := map[string]stored{}
	record := func(key string, m memory.Memory) {
		mu.Lock()
		defer mu.Unlock()
		got := stored{m.MysisID, m.ID, m.Seq}
		if prev, ok := byKey[key]; ok && prev != got {
			t.Errorf("key %s answered as %+v and as %+v", key, prev, got)
		}
		byKey[key] = got
	}
	var wg sync.WaitGroup
	for a := range appenders {
		wg.Go(func() {
			for i := range calls {
				id := myses[a%own]
				if i%3 == 0 {
					id = myses[own+i%shared]
				}
				var batch []memory.NewMemory
				for j := range 1 + i%2 {
					key := fmt.Sprintf("a%d-%d-%d", a, i, j)
					batch = append(batch, memory.NewMemory{Role: memory.RoleUser, Source: memory.SourceDirect, Content: key, IdempotencyKey: key})
				}
				tries := 1 + i%4/3 // every fourth call is sent twice, concurrently
				var inner sync.WaitGroup
				for range tries {
					inner.Go(func() {
						out, err := s.AppendMemories(ctx, id, batch)
						if err != nil {
							t.Error(err)
							return
						}
						for j, m := range out {
							record(batch[j].IdempotencyKey, m)
						}
					})
				}
				inner.Wait()
			}
		})
	}
	wg.Wait()
	total := 0
	for _, id := range myses {
		rows := must[[]memory.Memory](t)(s.ListMemoriesRange(ctx, id, 1, 0, 10_000))
		for i, r := range rows {
			if r.Seq != int64(i+1) {
				t.Fatalf("mysis %s: seq gap or duplicate at %d: %d", id, i, r.Seq)
			}
			if byKey[r.IdempotencyKey] != (stored{id, r.ID, r.Seq}) {
				t.Fatalf("row %+v was answered as %+v", r, byKey[r.IdempotencyKey])
			}
		}
		if y := must[memory.Mysis](t)(s.GetMysis(ctx, id)); y.LastSeq != int64(len(rows)) {
			t.Fatalf("mysis %s: last seq %d, %d rows", id, y.LastSeq, len(rows))
		}
		total += len(rows)
	}
	if want := appenders * (calls + calls/2); total != len(byKey) || total != want {
		t.Fatalf("%d rows stored for %d keys, want %d", total, len(byKey), want)
	}
}
