package pgstore

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// Group commit for small appends.
//
// An append's cost on a busy service is mostly per transaction, not per row: two round trips, the lock of the
// mysis row and one WAL flush at COMMIT, with the backend and the service scheduled once for each. Concurrent small
// appends to different myses are therefore coalesced into one transaction (runGroup, append_group.go): one lock
// statement for all their myses, one idempotency lookup, one multi-row INSERT, one UPDATE of the myses, one COMMIT,
// so the callers of a group share the round trips and the flush.
//
// Leader/follower, without timers: a caller that finds fewer than maxGroupsInFlight groups in flight leads a group
// of its own call at once (an idle service adds no wait, and a lone call runs exactly as it always did); a caller
// that finds them all in flight queues. When a group's transaction ends and callers are queued, the goroutine that
// ran it hands the queue on to a flusher goroutine (the leader returns at once with its own result): the flusher
// takes the queued calls as the next group, runs it, and repeats until the queue is empty. So whoever queues while
// a transaction is in flight rides in the next one, and groups grow with the load by themselves.
//
// A call returns only after the COMMIT of the transaction that holds it succeeded (or with its own error), so every
// acknowledged row is durable.
const (
	// maxGroupsInFlight is how many group transactions run at once. One in flight already coalesces everything that
	// arrives during its round trips and flush; a second overlaps one group's WAL flush (3 ms on the benchmark
	// machine's disk) with the next group's work. Two groups may hold calls of the same mysis (never one group,
	// see take): the second waits for the first one's row lock, as concurrent appends of one mysis always did.
	maxGroupsInFlight = 2
	// maxGroupCalls bounds a group's calls. Every member waits for the whole group's transaction and the group holds
	// all its myses' row locks until COMMIT; 64 calls of one or two rows insert in about a millisecond, when the
	// commit's fixed cost (two round trips and a flush) is already shared 64 ways, so larger groups would gain
	// little per call and make each member wait longer.
	maxGroupCalls = 64
	// maxGroupRows bounds a group's rows for the same reason: 256 rows keep the group's INSERT short next to its
	// fixed cost.
	maxGroupRows = 256
	// maxGroupedCallRows is the largest call that joins groups. A bigger batch already amortises its transaction
	// over its rows; it runs alone, beside the groups, as before group commit.
	maxGroupedCallRows = 16
)

// appendCall is one AppendMemories or AppendMemoriesIf call on its way to the database.
type appendCall struct {
	ctx     context.Context
	mysisID string
	ms      []memory.NewMemory
	cond    *memory.AppendCondition // nil: unconditional
	// res is the call's outcome, written by the group that runs it; done receives it. done is buffered so a group
	// never waits for a caller that stopped listening.
	res  appendResult
	done chan appendResult
}

type appendResult struct {
	out []memory.Memory
	err error
}

// committer queues small appends and runs them in groups (see the comment at the top of this file).
type committer struct {
	run func(ctx context.Context, calls []*appendCall) // runs a group and sets each call's res

	mu       sync.Mutex
	inFlight int           // group transactions running
	queue    []*appendCall // waiting for the next group; non-empty only while inFlight == maxGroupsInFlight

	groups, calls atomic.Int64 // transactions run, calls they held (AppendTransactions)

	hooks groupHooks
}

// groupHooks let tests see the committer's steps and hold a group before its transaction; nil in production.
type groupHooks struct {
	queued func(n int)          // a call joined the queue, which now holds n calls
	group  func(myses []string) // a group of calls on these myses is about to run its transaction
}

// submit runs c: at once in a group of its own when a group slot is free or c is large, else in a later group.
func (cm *committer) submit(c *appendCall) ([]memory.Memory, error) {
	if len(c.ms) > maxGroupedCallRows {
		cm.runGroup(c.ctx, []*appendCall{c})
		return c.res.out, c.res.err
	}
	cm.mu.Lock()
	if cm.inFlight < maxGroupsInFlight {
		cm.inFlight++
		cm.mu.Unlock()
		cm.runGroup(c.ctx, []*appendCall{c})
		cm.handOff()
		return c.res.out, c.res.err
	}
	c.done = make(chan appendResult, 1)
	cm.queue = append(cm.queue, c)
	n := len(cm.queue)
	cm.mu.Unlock()
	if cm.hooks.queued != nil {
		cm.hooks.queued(n)
	}
	select {
	case r := <-c.done:
		return r.out, r.err
	case <-c.ctx.Done():
		return cm.cancel(c)
	}
}

// cancel handles a queued caller whose context ended. Still queued, its call is withdrawn and writes nothing. Taken
// into a group already, the group goes on without waiting for it (the call may still commit, as a call cancelled
// during its COMMIT always could; a retry with the same idempotency keys returns the stored rows) — unless its
// result is already there, which is then the truer answer.
func (cm *committer) cancel(c *appendCall) ([]memory.Memory, error) {
	cm.mu.Lock()
	for i, q := range cm.queue {
		if q == c {
			cm.queue = append(cm.queue[:i], cm.queue[i+1:]...)
			break
		}
	}
	cm.mu.Unlock()
	select {
	case r := <-c.done:
		return r.out, r.err
	default:
		return nil, c.ctx.Err()
	}
}

// handOff ends a group slot's turn: with callers queued, a flusher takes over the slot; else the slot is freed.
func (cm *committer) handOff() {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	if len(cm.queue) == 0 {
		cm.inFlight--
		return
	}
	go cm.flush()
}

// flush runs queued groups until the queue is empty, then frees its slot.
func (cm *committer) flush() {
	for {
		cm.mu.Lock()
		g := cm.take()
		if len(g) == 0 {
			cm.inFlight--
			cm.mu.Unlock()
			return
		}
		cm.mu.Unlock()
		// The group's transaction must not end with one member's context: it runs under none of them (keeping the
		// first one's values for the logs). A member that gives up returns at once (submit).
		cm.runGroup(context.WithoutCancel(g[0].ctx), g)
		for _, c := range g {
			c.done <- c.res
		}
	}
}

// take removes the next group from the queue, in arrival order, within the group bounds. A second call of a mysis
// already in the group stays queued for a later group: the group plans each mysis from one locked row.
func (cm *committer) take() []*appendCall {
	var g, rest []*appendCall
	seen := map[string]bool{}
	rows := 0
	for _, c := range cm.queue {
		if seen[c.mysisID] || len(g) == maxGroupCalls || rows+len(c.ms) > maxGroupRows {
			rest = append(rest, c)
			continue
		}
		seen[c.mysisID] = true
		rows += len(c.ms)
		g = append(g, c)
	}
	cm.queue = rest
	return g
}

// runGroup runs calls as one group (after the test hook).
func (cm *committer) runGroup(ctx context.Context, calls []*appendCall) {
	cm.groups.Add(1)
	cm.calls.Add(int64(len(calls)))
	if cm.hooks.group != nil {
		ids := make([]string, len(calls))
		for i, c := range calls {
			ids[i] = c.mysisID
		}
		cm.hooks.group(ids)
	}
	cm.run(ctx, calls)
}

// AppendTransactions reports how many append transactions the store ran and how many calls they held (a fallback
// counts its group and then each call again), for the benchmark's report.
func (s *Store) AppendTransactions() (transactions, calls int64) {
	return s.groups.groups.Load(), s.groups.calls.Load()
}
