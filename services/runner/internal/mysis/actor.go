package mysis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/redact"
	"github.com/zoeaswarm/zoea/libs/retry"
	"github.com/zoeaswarm/zoea/libs/text"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

// Config tunes an actor.
type Config struct {
	// MaxToolIterations bounds the LLM calls of one turn (default 10).
	MaxToolIterations int
	// MaxCallsPerReply bounds the tool calls run from one reply (default DefaultMaxCallsPerReply); the rest are
	// answered with a tool error.
	MaxCallsPerReply int
	// TurnPause is the wait between autonomous turns (default 2s); a wake cuts it short.
	TurnPause time.Duration
	// BackoffMin and BackoffMax bound the exponential retry delay of an errored mysis (default 2s and 2min): the
	// first delay is BackoffMin, each later one doubles up to BackoffMax, and each is jittered down by up to 20%
	// (libs/retry) so that myses failing together (an LLM outage) do not retry together.
	BackoffMin, BackoffMax time.Duration
	// LLMTimeout bounds one LLM call, its retries and their waits included (0: no bound but the actor's context).
	// The byte limit on a reply ends a provider that sends without end; this ends one that sends too slowly, or
	// stops sending and keeps the connection open, which would otherwise hold the mysis for ever.
	LLMTimeout time.Duration
	// ResumeWindow is how many recent memories are read to find where an interrupted turn stopped (default 50).
	ResumeWindow int
	// Owner is this replica's id, reported in the live status.
	Owner  string
	Logger *slog.Logger
	// Redactor scrubs every text the actor writes down or shows (libs/redact): state reasons, the live status's
	// last error, events, call records and tool errors shown to the model. A provider or game server may echo a
	// credential in an error, and these outlive the process. Nil: the shape rules only.
	Redactor *redact.Redactor
}

func (c Config) withDefaults() Config {
	if c.MaxToolIterations <= 0 {
		c.MaxToolIterations = 10
	}
	if c.MaxCallsPerReply <= 0 {
		c.MaxCallsPerReply = DefaultMaxCallsPerReply
	}
	if c.TurnPause < 0 {
		c.TurnPause = 0
	}
	if c.BackoffMin <= 0 {
		c.BackoffMin = 2 * time.Second
	}
	if c.BackoffMax < c.BackoffMin {
		c.BackoffMax = max(2*time.Minute, c.BackoffMin)
	}
	if c.ResumeWindow <= 0 {
		c.ResumeWindow = 50
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Deps are the ports an actor uses. Events and Status may be nil.
type Deps struct {
	Store     Store
	Composer  Composer
	Tools     Tools
	Providers Providers
	Events    Events
	Status    StatusSink
	// Spend, Calls, Metrics and Clock may be nil: no limits and no cost, failed calls unrecorded, no metrics,
	// the wall clock.
	Spend   Spend
	Calls   CallLog
	Metrics Metrics
	Clock   Clock
}

// errInterrupted ends a turn early because the stored state changed (stop, delete, idle): the loop re-reads it.
var errInterrupted = errors.New("turn interrupted")

// errReread ends a turn that started from a carried-over mysis record (Actor.next) before it did anything, because
// the composition showed memories stored since this actor's final answer: the loop starts it again from a fresh read.
var errReread = errors.New("turn start needs a fresh read")

// Actor owns one mysis while this replica holds its lease. All its work happens on the goroutine running Run;
// Wake and Status are safe from any goroutine.
type Actor struct {
	id   string
	deps Deps
	cfg  Config
	log  *slog.Logger

	mu       sync.Mutex
	pending  map[WakeReason]bool
	status   Status
	sig      chan struct{}
	stopping atomic.Bool
	// yielding ends Run at the next turn boundary: the lease manager hands the mysis to another replica.
	yielding atomic.Bool
	clock    Clock
	metrics  Metrics

	// Owned by the Run goroutine.
	tools    ToolSession
	endpoint string // the SpaceMolt endpoint tools was opened for (Mysis.SpaceMoltEndpoint)
	toolList []llm.Tool
	readOnly map[string]bool // tools and "tool.action"s whose calls may be re-run on resume (llm.ReadOnlyCalls)
	prepared bool
	// discarded says a paid final answer was thrown away since this actor's last final answer (ErrPromptArrived):
	// the next one is kept. Held across turns cut short (an error, an interruption), so faults do not renew the
	// allowance. The stored record says the same (Mysis.ReplyDiscarded, set by recording the discarded call), so a
	// new owner — another replica, this one after a restart, a hand-over — knows it too; this copy covers a record
	// that could not be written.
	discarded bool
	backoff   *retry.Backoff
	retryAt   time.Time
	// lastFinal is the seq of the final answer (no tool calls) this actor stored last: while it is still the
	// mysis's last seq, the next turn starts autonomous without reading memories (see resumePoint).
	lastFinal int64
	// next is the mysis record read with the last composition of a turn that ended with that final answer. The
	// next turn starts from it instead of a GetMysis when no wake arrived in between: its first composition reads
	// the record again (state, last seq) before anything is stored or sent (issue 16).
	next *Mysis
	// lastPrompt is the composer's count of the last request checked against the spend limits.
	lastPrompt int
	// settledSeq is the last seq of a stopped mysis whose history answerStopped found complete (or completed): the
	// stopped branch reads memories again only when something was stored since.
	settledSeq int64
	// compaction is where the last composition's compaction boundary sat: the next compose passes it back
	// (ComposeRequest.Previous), so whichever composer replica serves it extends the request before.
	compaction Compaction
}

// New makes an actor for mysis id.
func New(id string, deps Deps, cfg Config) *Actor {
	cfg = cfg.withDefaults()
	var clock Clock = realClock{}
	if deps.Clock != nil {
		clock = deps.Clock
	}
	var metrics Metrics = noMetrics{}
	if deps.Metrics != nil {
		metrics = deps.Metrics
	}
	return &Actor{
		id: id, deps: deps, cfg: cfg, clock: clock, metrics: metrics,
		log:     cfg.Logger.With("mysis_id", id),
		pending: map[WakeReason]bool{},
		sig:     make(chan struct{}, 1),
		status:  Status{MysisID: id, Owner: cfg.Owner, Credits: -1},
		backoff: retry.New(retry.Policy{Initial: cfg.BackoffMin, Max: cfg.BackoffMax, Jitter: 0.2}),
	}
}

// ID is the mysis id.
func (a *Actor) ID() string { return a.id }

// Wake hints that something changed for this mysis. It never blocks; repeated wakes coalesce.
func (a *Actor) Wake(r WakeReason) {
	a.mu.Lock()
	a.pending[r] = true
	a.mu.Unlock()
	select {
	case a.sig <- struct{}{}:
	default:
	}
}

// Stop asks the actor to end at its next safe point (after the current LLM call or tool), for a graceful
// shutdown; cancelling Run's context instead ends it at once.
func (a *Actor) Stop() {
	a.stopping.Store(true)
	select {
	case a.sig <- struct{}{}:
	default:
	}
}

// Yield asks the actor to end once its current turn is over — never inside a tool loop, unlike Stop — so the
// lease manager can hand the mysis to another replica (rebalancing); the next owner starts from a finished turn.
func (a *Actor) Yield() {
	a.yielding.Store(true)
	select {
	case a.sig <- struct{}{}:
	default:
	}
}

// Status returns a copy of the live status.
func (a *Actor) Status() Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status
}

// takeWakes clears and returns the pending wake reasons.
func (a *Actor) takeWakes() map[WakeReason]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.pending
	a.pending = map[WakeReason]bool{}
	return p
}

// takeControl clears and reports pending stop/delete wakes, leaving the others for the main loop.
func (a *Actor) takeControl() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	hit := a.pending[WakeStop] || a.pending[WakeDelete]
	delete(a.pending, WakeStop)
	delete(a.pending, WakeDelete)
	return hit
}

func (a *Actor) hasPending() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pending) > 0
}

// wait returns when a wake arrives, d passes (d <= 0: no timeout) or ctx ends.
func (a *Actor) wait(ctx context.Context, d time.Duration) {
	if a.hasPending() || a.stopping.Load() || a.yielding.Load() {
		return
	}
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ctx.Done():
	case <-a.sig:
	case <-timeout:
	}
}

// Run drives the mysis until ctx ends (lease lost, shutdown) or the mysis is deleted. It never gives up on
// errors: they put the mysis in the errored state and it is retried with exponential backoff.
func (a *Actor) Run(ctx context.Context) error {
	defer a.closeTools()
	a.log.Debug("actor started")
	for ctx.Err() == nil && !a.stopping.Load() && !a.yielding.Load() {
		if m, ok := a.carried(); ok {
			// The previous turn ended with this actor's own final answer and nothing woke the actor since: the
			// turn starts without reading the mysis, and its first composition checks the record it reads.
			err := a.safeTurn(ctx, m, true)
			if errors.Is(err, errReread) {
				continue
			}
			if !a.turnDone(ctx, m, err) {
				return nil
			}
			continue
		}
		m, err := a.deps.Store.GetMysis(ctx, a.id)
		if errs.Is(err, errs.NotFound) {
			a.log.Info("mysis deleted; actor exits")
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			a.noteError(ctx, fmt.Errorf("read mysis: %w", err))
			a.wait(ctx, a.nextBackoff())
			a.takeWakes()
			continue
		}
		if m.State == StateStopped && m.LastSeq != a.settledSeq {
			// Before the stop is reported taken in: a stopped mysis runs no turn, so a tool loop cut by a fault
			// (its owner died, lost its lease or failed during a call) is answered here, or never (issue 26).
			if err := a.settleStopped(ctx, m); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if errors.Is(err, errKeyTaken) {
					continue // a former owner answered the call meanwhile: read again, it is settled
				}
				a.noteError(ctx, fmt.Errorf("answer the cut calls of a stopped mysis: %w", err))
				a.wait(ctx, a.nextBackoff())
				a.takeWakes()
				continue
			}
		}
		if a.Status().State != m.State {
			// The stored state changed under the actor (the API stopped, started or resumed it) and the actor is
			// at a safe point: the live status says so, and observers know the change has been taken in.
			a.setStatus(func(s *Status) { s.State = m.State })
			a.putStatus(ctx)
		}
		switch m.State {
		case StateRunning:
			if d := time.Until(a.retryAt); d > 0 {
				// A failure whose errored state could not be stored: still honour the backoff.
				a.wait(ctx, d)
				a.takeControl()
				continue
			}
			if !a.turnDone(ctx, m, a.safeTurn(ctx, m, false)) {
				return nil
			}
		case StateIdle:
			if a.spendIdle(ctx, m) {
				continue
			}
			a.takeWakes()
			if err := a.reconcileIdle(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				a.noteError(ctx, err)
				a.wait(ctx, a.nextBackoff())
				continue
			}
			if a.Status().State == StateIdle {
				a.wait(ctx, 0)
			}
		case StateStopped:
			a.takeWakes()
			a.wait(ctx, 0)
		case StateErrored:
			a.takeWakes()
			if a.retryAt.IsZero() {
				a.retryAt = time.Now().Add(a.nextBackoff())
			}
			if d := time.Until(a.retryAt); d > 0 {
				a.wait(ctx, d)
				continue
			}
			a.retryAt = time.Time{}
			a.transition(ctx, StateErrored, StateRunning, "retrying after error: "+m.StateReason, nil)
		default:
			a.noteError(ctx, fmt.Errorf("unknown state %q", m.State))
			a.wait(ctx, a.nextBackoff())
		}
	}
	return nil
}

// safeTurn is runTurn with a panic turned into the turn's error: the mysis goes errored and is retried with backoff
// like any failed turn, instead of taking down every mysis of the replica, and the panic's value reaches the log
// and the state reason redacted, not printed raw by the runtime. The tool session is closed, since the panic may
// have left it half way through a call; the next turn opens a new one.
func (a *Actor) safeTurn(ctx context.Context, m Mysis, assumed bool) (err error) {
	defer func() {
		if p := recover(); p != nil {
			a.log.Error("panic in a turn", "panic", a.red().String(fmt.Sprint(p)), "stack", string(debug.Stack()))
			a.closeTools()
			err = fmt.Errorf("internal error in the turn (the runner's log has the details): %s", a.red().String(fmt.Sprint(p)))
		}
	}()
	return a.runTurn(ctx, m, assumed)
}

// red is the actor's redactor (nil applies the shape rules).
func (a *Actor) red() *redact.Redactor { return a.cfg.Redactor }

// carried returns the mysis record the next turn may start from without a read (see Actor.next): only when no wake
// is pending. Its last seq is this actor's final answer, which the first composition verifies.
func (a *Actor) carried() (Mysis, bool) {
	n := a.next
	a.next = nil
	if n == nil || a.hasPending() || n.State != StateRunning || a.lastFinal == 0 || time.Until(a.retryAt) > 0 {
		return Mysis{}, false
	}
	m := *n
	m.LastSeq = a.lastFinal
	return m, true
}

// turnDone handles the end of a turn; it reports false when Run must return (ctx over).
func (a *Actor) turnDone(ctx context.Context, m Mysis, err error) bool {
	a.metrics.TurnDone(ctx, m, turnOutcome(err))
	switch {
	case err == nil:
		a.retryAt = time.Time{}
		a.backoff.Reset()
		a.wait(ctx, a.cfg.TurnPause)
	case errors.Is(err, errInterrupted):
	case ctx.Err() != nil:
		return false
	default:
		a.fail(ctx, err)
	}
	return true
}

// reconcileIdle starts an idle mysis whose newest memory is an unanswered commander message: wakes are only
// hints, so the memory store decides.
func (a *Actor) reconcileIdle(ctx context.Context) error {
	recent, err := a.deps.Store.Recent(ctx, a.id, 1)
	if err != nil {
		return fmt.Errorf("read memories: %w", err)
	}
	if len(recent) == 0 {
		return nil
	}
	last := recent[len(recent)-1]
	if last.Role != "user" || (last.Source != SourceDirect && last.Source != SourceBroadcast) {
		return nil
	}
	reason := "woken by broadcast"
	if last.Source == SourceDirect {
		reason = "woken by direct message"
	}
	a.transition(ctx, StateIdle, StateRunning, reason, nil)
	return nil
}

// transition is a compare-and-set state change; losing the race is fine (the loop re-reads the state). The reason
// is stored and shown to the commander, so it is redacted here, whatever it quotes (an errored state's reason
// carried into "retrying after error: …" included).
func (a *Actor) transition(ctx context.Context, from, to State, reason string, count *int) bool {
	reason = a.red().String(reason)
	_, err := a.deps.Store.SetState(ctx, a.id, StateChange{To: to, Reason: reason, Count: count, Expected: from})
	if err != nil {
		if !errs.Is(err, errs.Conflict) && !errs.Is(err, errs.NotFound) && ctx.Err() == nil {
			a.noteError(ctx, fmt.Errorf("set state %s: %w", to, err))
		}
		return false
	}
	a.setStatus(func(s *Status) { s.State = to })
	a.publish(ctx, Event{Kind: EventStateChanged, From: from, To: to, Reason: reason})
	a.putStatus(ctx)
	a.log.Info("state changed", "from", from, "to", to, "reason", reason)
	return true
}

// fail records a turn failure: the mysis becomes errored and is retried after the backoff.
func (a *Actor) fail(ctx context.Context, err error) {
	a.noteError(ctx, err)
	a.retryAt = time.Now().Add(a.nextBackoff())
	// Redacted before the cut: a secret cut in half is no longer recognisable, and half a key is still a leak.
	a.transition(ctx, StateRunning, StateErrored, truncate(a.red().String(err.Error()), 500), nil)
}

func (a *Actor) nextBackoff() time.Duration { return a.backoff.Next() }

func (a *Actor) noteError(ctx context.Context, err error) {
	text := a.red().String(err.Error())
	a.log.Warn("mysis error", "err", text)
	a.setStatus(func(s *Status) { s.LastError = truncate(text, 500) })
	a.publish(ctx, Event{Kind: EventError, Message: truncate(text, 500)})
	a.putStatus(ctx)
}

func (a *Actor) setStatus(f func(*Status)) {
	a.mu.Lock()
	f(&a.status)
	a.status.UpdatedAt = time.Now()
	a.mu.Unlock()
}

func (a *Actor) putStatus(ctx context.Context) {
	if a.deps.Status != nil {
		a.deps.Status.PutStatus(ctx, a.Status())
	}
}

func (a *Actor) publish(ctx context.Context, ev Event) {
	if a.deps.Events == nil {
		return
	}
	ev.MysisID = a.id
	if ev.At.IsZero() {
		ev.At = time.Now()
	}
	a.deps.Events.Publish(ctx, ev)
}

func (a *Actor) closeTools() {
	if a.tools != nil {
		a.tools.Close()
		a.tools, a.toolList, a.readOnly, a.prepared = nil, nil, nil, false
	}
}

func truncate(s string, n int) string {
	return text.Clip(s, n, "…")
}

func turnOutcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, errInterrupted):
		return "interrupted"
	}
	return "error"
}
