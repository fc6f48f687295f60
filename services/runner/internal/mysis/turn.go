package mysis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/chat/chatvalid"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/redact"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

// resumePoint is where the newest turn stands, read from the stored memories.
type resumePoint struct {
	// pending: the newest turn has no final assistant answer (a prompt waits, or a tool loop was cut short).
	pending bool
	// unanswered are tool calls of the newest assistant message that have no stored result yet.
	unanswered []chat.ToolCall
	// calls are all the tool calls of that assistant message.
	calls []chat.ToolCall
	// assistantSeq is the seq of that assistant message.
	assistantSeq int64
	lastSeq      int64
}

// findResumePoint decides how the next turn starts. A turn is complete when the newest memory is an assistant
// message without tool calls; anything else (a prompt, a nudge, a cut tool loop) means the turn is resumed rather
// than a new autonomous turn opened — which is also what keeps a mysis whose LLM is down from burning nudges.
//
// Unanswered calls are looked for behind newer prompts too: a runner killed during a call while the commander
// broadcast leaves [assistant with calls, (some results), broadcast, …]. The newest assistant message decides —
// prompts and results after it are passed over — so every call it made gets its one result (the real one, or
// "result unknown") before the prompt is acted on. recent must reach back to that assistant message (resumePoint
// reads until it does); a window of prompts alone has no calls to answer.
func findResumePoint(recent []Memory) resumePoint {
	if len(recent) == 0 {
		return resumePoint{}
	}
	last := recent[len(recent)-1]
	rp := resumePoint{lastSeq: last.Seq}
	if last.Role == chat.RoleAssistant && len(last.ToolCalls) == 0 {
		return rp // a final answer: the turn is complete
	}
	rp.pending = last.Role == chat.RoleUser || last.Role == chat.RoleAssistant || last.Role == chat.RoleTool
	answered := map[string]bool{}
	for i := len(recent) - 1; i >= 0; i-- {
		m := recent[i]
		switch m.Role {
		case chat.RoleTool:
			answered[m.ToolCallID] = true
			continue
		case chat.RoleAssistant:
			for _, c := range m.ToolCalls {
				if !answered[c.ID] {
					rp.unanswered = append(rp.unanswered, c)
				}
			}
			if len(m.ToolCalls) > 0 {
				rp.assistantSeq = m.Seq
				rp.calls = m.ToolCalls
			}
		case chat.RoleUser:
			continue
		}
		break
	}
	return rp
}

// maxResumeWindow is the most memories one resume reads: the memory service's largest window.
const maxResumeWindow = 1000

// reachesAssistant reports whether recent (oldest first) holds an assistant message, or is the whole history.
func reachesAssistant(recent []Memory, limit int) bool {
	if len(recent) < limit || len(recent) > 0 && recent[0].Seq <= 1 {
		return true
	}
	for _, m := range recent {
		if m.Role == chat.RoleAssistant {
			return true
		}
	}
	return false
}

// ensureTools prepares the tool session once: no turn ever runs without the tool list (LESSONS 8). A mysis whose
// SpaceMolt endpoint was changed (configure) gets a new session on the new endpoint here, at a turn start: calls of
// the old session left unanswered are answered by the resume below like any cut call.
func (a *Actor) ensureTools(ctx context.Context, m Mysis) error {
	if a.tools != nil && a.endpoint != m.SpaceMoltEndpoint {
		a.log.Info("SpaceMolt endpoint changed; opening a new tool session", "from", a.endpoint, "to", m.SpaceMoltEndpoint)
		a.closeTools()
	}
	if a.tools == nil {
		a.tools, a.endpoint = a.deps.Tools.Open(m), m.SpaceMoltEndpoint
	}
	if a.prepared {
		return nil
	}
	list, err := a.tools.Prepare(ctx)
	if err != nil {
		a.closeTools()
		return fmt.Errorf("prepare tools: %w", err)
	}
	a.toolList, a.prepared = list, true
	a.readOnly = llm.ReadOnlyCalls(list)
	return nil
}

// turnState is what one turn carries from one iteration to the next.
type turnState struct {
	// m is the mysis record: from the turn start, then the one each composition read.
	m Mysis
	// lastSeq is the newest seq this turn has seen or stored.
	lastSeq int64
	// held is the last tool result of the previous iteration: it is stored by the next compose call.
	held []NewMemory
	// autonomous says the turn was not opened by a prompt: its first composition decides the nudge.
	autonomous bool
}

// runTurn runs one turn: compose → LLM → tools → compose … until the model answers without tool calls or the
// iteration limit is reached. It returns errInterrupted when the stored state changed under it.
//
// Memory round trips per iteration (issue 16): the compose call is the iteration's one read — the window, the mysis
// record (which replaces m from then on) and the spend counts — and it carries the previous iteration's last tool
// result; the assistant reply is the one write. assumed says m was not read at the turn start but carried over
// from the previous turn's last composition (see Run): the first composition then checks that nothing was stored
// since this actor's own final answer, and hands the turn back to Run for a fresh read otherwise.
func (a *Actor) runTurn(ctx context.Context, m Mysis, assumed bool) error {
	a.takeWakes() // wakes from now on cut the pause after this turn short
	if err := a.ensureTools(ctx, m); err != nil {
		return err
	}
	ts, err := a.resumeTurn(ctx, m)
	if err != nil {
		return err
	}
	for it := range a.cfg.MaxToolIterations {
		done, err := a.iterate(ctx, ts, it, assumed)
		if err != nil {
			return err
		}
		if done {
			break
		}
	}
	if len(ts.held) > 0 {
		// The iteration limit ended the turn after tools ran: no compose follows to carry the last result.
		if err := a.storeHeld(ctx, ts.held); err != nil {
			return err
		}
	}
	a.setStatus(func(s *Status) { s.Turns++; s.LastError = "" })
	a.putStatus(ctx)
	return nil
}

// resumeTurn reads where the turn stands (resumePoint) and finishes a tool loop that was cut mid-call (crash,
// lease lost, a failed call) before the model is asked again: reads are run again; a call that may have changed
// the game is answered with InterruptedResult instead (execCalls).
func (a *Actor) resumeTurn(ctx context.Context, m Mysis) (*turnState, error) {
	rp, err := a.resumePoint(ctx, m)
	if err != nil {
		return nil, err
	}
	ts := &turnState{m: m, lastSeq: rp.lastSeq, autonomous: !rp.pending}
	if len(rp.unanswered) > 0 {
		seq, held, err := a.execCalls(ctx, rp.assistantSeq, rp.unanswered, true, storedProblems(rp.calls, a.cfg.MaxCallsPerReply))
		if err != nil {
			return nil, err
		}
		ts.lastSeq, ts.held = max(ts.lastSeq, seq), held
	}
	return ts, nil
}

// iterate runs one iteration of the turn: compose, ask the model, store its reply, run its calls. It reports true
// when the reply was a final answer (the turn is over); a discarded reply is an iteration that asks again.
func (a *Actor) iterate(ctx context.Context, ts *turnState, it int, assumed bool) (bool, error) {
	comp, err := a.compose(ctx, ts.autonomous && it == 0, ts.held)
	ts.held = nil
	if err != nil {
		return false, err
	}
	for _, ap := range comp.Appended {
		ts.lastSeq = max(ts.lastSeq, ap.Seq)
	}
	fromCompose := comp.Mysis != nil
	seq, prov, err := a.beforeCall(ctx, ts, comp, it, assumed)
	if err != nil {
		return false, err
	}
	resp, call, err := a.callModel(ctx, ts.m, prov, comp)
	if err != nil {
		return false, err
	}
	// The reply is untrusted: store it in a form the store accepts (see reply.go).
	reply := checkReply(resp.Message, resp.Reasoning, seq, a.cfg.MaxCallsPerReply)
	asst, kept, err := a.storeReply(ctx, ts.m, reply, call, seq)
	if err != nil || !kept {
		return false, err // !kept: discarded, compose again with the prompt in view
	}
	if len(reply.Problems) > 0 {
		a.log.Info("model reply had bad tool calls; answering them with tool errors", "seq", asst.Seq, "bad_calls", len(reply.Problems), "calls", len(resp.Message.ToolCalls))
	}
	ts.lastSeq = asst.Seq
	final := len(asst.ToolCalls) == 0
	if final {
		a.lastFinal, a.discarded = asst.Seq, false
		if fromCompose {
			next := ts.m
			next.ReplyDiscarded = false // the final answer's append cleared it
			a.next = &next
		}
	}
	a.setStatus(func(s *Status) {
		s.LastAction, s.LastActionAt = "llm "+label(asst), time.Now()
	})
	a.log.Debug("llm replied", "seq", asst.Seq, "tool_calls", len(asst.ToolCalls), "took", call.Latency)
	if final {
		return true, nil
	}
	if a.interrupted(ctx) {
		a.answerNotRun(ctx, asst.Seq, asst.ToolCalls)
		return false, errInterrupted
	}
	seq, held, err := a.execCalls(ctx, asst.Seq, asst.ToolCalls, false, reply.problemsByID(asst.ToolCalls, a.cfg.MaxCallsPerReply))
	if err != nil {
		return false, err
	}
	ts.lastSeq, ts.held = max(ts.lastSeq, seq), held
	return false, nil
}

// beforeCall checks what the composition read and readies the LLM call: a mysis no longer running ends the turn,
// a carried record that is stale hands it back for a fresh read, the record replaces ts.m, then the provider, the
// turn's encouragement (first iteration), the request's validity and the spend limits. It returns the seq the reply
// is keyed by: the newest memory the model sees.
func (a *Actor) beforeCall(ctx context.Context, ts *turnState, comp Composition, it int, assumed bool) (int64, llm.Provider, error) {
	if fresh := comp.Mysis; fresh != nil {
		if fresh.State != StateRunning {
			return 0, nil, errInterrupted // stopped, paused by a limit, …: the loop re-reads the state
		}
		if assumed && it == 0 && fresh.LastSeq != a.lastFinal {
			return 0, nil, errReread // something was stored since our own final answer: start the turn from a fresh read
		}
		ts.m = *fresh
	}
	m := ts.m
	prov, err := a.deps.Providers.Provider(m.Provider)
	if err != nil {
		return 0, nil, fmt.Errorf("provider %q: %w", m.Provider, err)
	}
	seq := max(comp.MaxSeq, ts.lastSeq)
	if it == 0 {
		nudgeSeq, err := a.applyEncouragement(ctx, m, comp)
		if err != nil {
			return 0, nil, err
		}
		seq = max(seq, nudgeSeq)
	}
	// The last guard before the provider: a request that breaks the providers' rules is never sent.
	if err := chatvalid.Strict.Validate(comp.Messages); err != nil {
		return 0, nil, fmt.Errorf("composed request rejected: %w", err)
	}
	a.metrics.Composed(ctx, m, comp.Tokens, comp.Budget)
	if err := a.checkSpend(ctx, m, comp.Tokens, comp.Spend); err != nil {
		return 0, nil, err
	}
	return seq, prov, nil
}

// callModel sends the composed request and accounts for the call; a failed call is recorded on its own.
func (a *Actor) callModel(ctx context.Context, m Mysis, prov llm.Provider, comp Composition) (llm.Response, LlmCall, error) {
	// Windows count by the injected clock; latency is wall time.
	start, wall, callID := a.clock.Now(), time.Now(), newCallID()
	cctx, endCall := a.metrics.StartLLMCall(ctx, m)
	if a.cfg.LLMTimeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(cctx, a.cfg.LLMTimeout)
		defer cancel()
	}
	resp, err := prov.Chat(cctx, llm.Request{Model: m.Model, Temperature: m.Temperature, Messages: comp.Messages, Tools: a.toolList})
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		// The call's own bound, not the actor's end: say which, since "context deadline exceeded" names neither.
		err = fmt.Errorf("no complete reply within %v, the longest one call may take (ZOEA_LLM_TIMEOUT): %w", a.cfg.LLMTimeout, err)
	}
	call := a.callRecord(m, callID, start, time.Since(wall), comp.Tokens, resp, err)
	endCall(call)
	if err != nil {
		a.recordAlone(ctx, call)
		return resp, call, fmt.Errorf("llm %s: %w", m.Provider, err)
	}
	return resp, call, nil
}

// storeReply stores the model's reply with its call's accounting. It reports kept=false when the reply was a final
// answer thrown away because a commander prompt arrived while the model wrote it: at most once per turn of the
// mysis (this turn's, whichever owner discarded it), after which the paid answer is kept.
func (a *Actor) storeReply(ctx context.Context, m Mysis, reply replyCheck, call LlmCall, seq int64) (Memory, bool, error) {
	content := reply.Content
	if strings.TrimSpace(content) == "" && len(reply.Calls) == 0 {
		content = "(no reply)"
	}
	// Keyed by the newest memory the model saw: a retry after a crash, or a second replica racing for the
	// same mysis, gets the stored row back instead of writing a second answer.
	nm := NewMemory{
		Role: chat.RoleAssistant, Source: SourceLLM, Content: content, Reasoning: reply.Reasoning,
		ToolCalls: reply.Calls, IdempotencyKey: fmt.Sprintf("llm:%s:%d", a.id, seq), LlmCall: &call,
	}
	var cond AppendCondition
	if len(reply.Calls) == 0 {
		// A final answer stored after a commander message the model did not see would mark that message as
		// answered. The memory service decides in the append's transaction whether one arrived after seq, so
		// none can slip in between the check and the write.
		cond.IfNoPromptAfter = &seq
	}
	stored, err := a.appendIf(ctx, nm, cond)
	if errors.Is(err, ErrPromptArrived) && !a.discarded && !m.ReplyDiscarded {
		// The first time in a turn, the answer is thrown away and the model asked again with the prompt in
		// view: a final answer stored after a prompt it never saw would close the turn on it. m is the record
		// the composition read just before this call: ReplyDiscarded says an earlier owner of the mysis (another
		// replica, this one before a restart) already threw this turn's one answer away.
		a.log.Debug("prompt arrived during the LLM call; composing again")
		a.discarded = true
		a.metrics.ReplyDiscarded(ctx, m)
		// Paid for, but no reply stored: a call row without a memory and without an error. Marked discarded,
		// it sets the mysis's ReplyDiscarded, so the allowance is spent for whoever owns the mysis next.
		call.Discarded = true
		a.recordAlone(ctx, call)
		return Memory{}, false, nil
	}
	if errors.Is(err, ErrPromptArrived) {
		// Never twice: a model slower than the commander's prompts would otherwise never finish a turn, paying
		// for every discarded answer (issue 26). This paid answer is kept; the prompts it did not see stay in
		// the history before it, and the next turn's request carries them.
		a.log.Info("prompt arrived during the LLM call again; keeping the answer, the prompt is taken next turn")
		if stored, err = a.append(ctx, nm); err == nil {
			a.promptSeen(ctx, m)
		}
	}
	if errors.Is(err, errKeyTaken) {
		// The reply was paid for; its accounting travelled with the refused append, so it is recorded on its own.
		a.log.Info("another writer stored this turn's reply first; resuming from the stored history", "seq", seq)
		call.Error = "reply not stored: another writer had stored the reply to the same request first"
		a.recordAlone(ctx, call)
	}
	if err != nil {
		return Memory{}, false, err
	}
	return stored, true, nil
}

// promptSeen resets the encouragement count after a kept answer that a commander prompt arrived during: the next
// turn begins autonomously (the answer is the newest memory), but a mysis the commander is talking to is not
// idling, so its nudges must not add up to the idle limit. Best effort: a stop or a failure here changes nothing
// the next turn's read does not see.
func (a *Actor) promptSeen(ctx context.Context, m Mysis) {
	zero := 0
	if _, err := a.deps.Store.SetState(ctx, a.id, StateChange{To: StateRunning, Reason: m.StateReason, Count: &zero, Expected: StateRunning}); err != nil {
		a.log.Debug("could not reset the encouragement count after a kept answer", "err", err)
	}
}

// compose asks for the next request, carrying held (the previous iteration's last tool result, stored by the
// memory service before it reads the window) and asking for the spend counts when a spend guard is configured.
// A compose that fails is followed by a plain append of held (same idempotency key: nothing is written twice),
// so the result survives a composer that is down.
func (a *Actor) compose(ctx context.Context, autonomous bool, held []NewMemory) (Composition, error) {
	req := ComposeRequest{BeginAutonomousTurn: autonomous, Tools: a.toolList, Append: held, Previous: a.compaction}
	if a.deps.Spend != nil {
		req.SpendAt = a.clock.Now()
	}
	comp, err := a.deps.Composer.Compose(ctx, a.id, req)
	if err != nil {
		if len(held) > 0 && ctx.Err() == nil {
			if serr := a.storeHeld(ctx, held); serr != nil {
				a.log.Debug("could not store the held tool result after a failed compose", "err", serr)
			}
		}
		if errs.Is(err, errs.NotFound) {
			return Composition{}, errInterrupted // deleted: the loop's read ends the actor
		}
		if errs.IsKeyReused(err) {
			return Composition{}, keyTaken(held[0])
		}
		return Composition{}, fmt.Errorf("compose: %w", err)
	}
	if len(comp.Appended) != len(held) {
		// A composer or memory service from before the relay ignored the rows (a rolling upgrade): store them on
		// their own and compose again, so the request answers every call.
		if err := a.storeHeld(ctx, held); err != nil {
			return Composition{}, err
		}
		req.Append = nil
		if comp, err = a.deps.Composer.Compose(ctx, a.id, req); err != nil {
			if errs.Is(err, errs.NotFound) {
				return Composition{}, errInterrupted
			}
			return Composition{}, fmt.Errorf("compose: %w", err)
		}
		a.compaction = comp.Compaction
		return comp, nil
	}
	a.compaction = comp.Compaction
	for _, m := range comp.Appended {
		a.publish(ctx, Event{Kind: EventMemoryAppended, MemoryIDs: []int64{m.ID}, Seqs: []int64{m.Seq}, Role: m.Role, Excerpt: truncate(m.Content, 200)})
	}
	return comp, nil
}

// storeHeld stores held tool results on their own (no compose call follows, or it failed).
func (a *Actor) storeHeld(ctx context.Context, held []NewMemory) error {
	for _, nm := range held {
		if _, err := a.append(ctx, nm); err != nil {
			return err
		}
	}
	return nil
}

// applyEncouragement carries out the composer's counter decision at the start of a turn. It returns the seq of
// the nudge it stored, if any.
func (a *Actor) applyEncouragement(ctx context.Context, m Mysis, comp Composition) (int64, error) {
	count := comp.NextCount
	switch comp.Action {
	case ActionIdle:
		// No LLM call: the turn ends here whether or not this replica won the compare-and-set.
		a.transition(ctx, StateRunning, StateIdle, IdleReason, &count)
		return 0, errInterrupted
	case ActionIncrement, ActionReset:
		var state *StateChange
		if comp.Action == ActionIncrement || m.EncouragementCount != count {
			state = &StateChange{To: StateRunning, Reason: m.StateReason, Count: &count, Expected: StateRunning}
		}
		if comp.Nudge == "" {
			if state == nil {
				return 0, nil
			}
			_, err := a.deps.Store.SetState(ctx, a.id, *state)
			return 0, encouragementErr(err)
		}
		// One call, one transaction: the nudge and the counter, only while the mysis is running (a Conflict
		// interrupts the turn) and only if no commander message landed after the composition (a nudge then would
		// bury it under a new turn).
		seen := comp.MaxSeq
		stored, err := a.appendIf(ctx, NewMemory{
			Role: chat.RoleUser, Source: SourceNudge, Content: comp.Nudge,
			IdempotencyKey: fmt.Sprintf("nudge:%s:%d", a.id, m.CurrentTurn+1),
		}, AppendCondition{IfNoPromptAfter: &seen, State: state})
		if errors.Is(err, ErrPromptArrived) {
			return 0, errInterrupted
		}
		if err := encouragementErr(err); err != nil {
			return 0, err
		}
		return stored.Seq, nil
	}
	return 0, nil
}

// encouragementErr classifies a failed counter write: a changed state (stop, delete, another writer) interrupts
// the turn, anything else fails it.
func encouragementErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errs.Is(err, errs.Conflict) || errs.Is(err, errs.NotFound):
		return errInterrupted
	}
	return fmt.Errorf("store encouragement count: %w", err)
}

// resumePoint tells where the turn stands. When the stored last seq (m is the Run loop's fresh GetMysis) is the seq
// of the final answer this actor stored last, that answer is the newest memory — memories are append-only with
// gapless seqs — so the turn is complete and no read is needed. Otherwise (this actor's first turn, a prompt that
// arrived, a cut tool loop) the newest memory is read, and only a cut tool loop needs the window.
func (a *Actor) resumePoint(ctx context.Context, m Mysis) (resumePoint, error) {
	if a.lastFinal > 0 && m.LastSeq == a.lastFinal {
		return resumePoint{lastSeq: m.LastSeq}, nil
	}
	recent, err := a.deps.Store.Recent(ctx, a.id, 1)
	if err == nil && len(recent) == 1 && !(recent[0].Role == chat.RoleAssistant && len(recent[0].ToolCalls) == 0) {
		// A prompt or a result is the newest memory: read back to the newest assistant message, past every prompt
		// that arrived after it, for calls it left unanswered. A burst of prompts longer than the window doubles
		// it, up to the memory service's largest window.
		for limit := min(a.cfg.ResumeWindow, maxResumeWindow); ; limit = min(2*limit, maxResumeWindow) {
			recent, err = a.deps.Store.Recent(ctx, a.id, limit)
			if err != nil || reachesAssistant(recent, limit) || limit == maxResumeWindow {
				break
			}
		}
	}
	if err != nil {
		return resumePoint{}, fmt.Errorf("read memories: %w", err)
	}
	return findResumePoint(recent), nil
}

// execCalls runs tool calls in order and stores each result; it returns the seq of the last one stored and the
// result it holds back.
//
// resumed says the calls were found unanswered when the turn started. Calls run one at a time and each result is
// stored before the next call starts, so only the first of them can have been running when the previous owner died
// (or failed in transport): the game may have executed it. A read-only call — judged by its tool and, for an
// action-dispatched tool (MCP v2), by its action: spacemolt action=get_status reads, action=travel does not (see
// llm.ReadOnlyCall) — is simply run again; any other is not
// re-executed but answered with InterruptedResult, so the model looks (get_status) before repeating it — running
// "sell" or "jump" again blindly could do it twice. The calls after it never started; once an outcome is unknown,
// the ones that would change the game are answered with NotRunResult, since the model planned them on a result it
// does not have.
//
// The last call's result is not stored here but returned (held): the next thing the turn does is compose, and the
// compose call stores it in its memory round trip (issue 16). No tool call runs between, so the rule above holds:
// a crash before the compose leaves exactly that last call unanswered, which the resume treats as above. When a
// stop interrupts the loop, the held result is stored at once.
//
// problems maps a call id to the tool error that answers a call the model got wrong; such a call is never run.
func (a *Actor) execCalls(ctx context.Context, assistantSeq int64, calls []chat.ToolCall, resumed bool, problems map[string]string) (int64, []NewMemory, error) {
	var last int64
	unknown := false
	for i, c := range calls {
		start := time.Now()
		var res ToolResult
		if msg, bad := problems[c.ID]; bad {
			res = ToolResult{Content: msg, IsError: true}
		} else if resumed && !llm.ReadOnlyCall(a.readOnly, c.Name, c.Arguments) && (i == 0 || unknown) {
			res = ToolResult{Content: NotRunResult, IsError: true}
			if i == 0 {
				res.Content, unknown = InterruptedResult, true
			}
			a.log.Info("cut tool call not executed again", "tool", c.Name, "call_id", c.ID, "result", res.Content)
		} else {
			var err error
			if res, err = a.tools.Call(ctx, c); err != nil {
				return last, nil, fmt.Errorf("tool %s: %w", c.Name, err)
			}
		}
		nm := a.resultMemory(assistantSeq, c, res)
		if i == len(calls)-1 {
			a.noteResult(ctx, c, res, nm.Content, time.Since(start))
			if a.interrupted(ctx) {
				if _, err := a.append(ctx, nm); err != nil {
					return last, nil, err
				}
				return last, nil, errInterrupted
			}
			return last, []NewMemory{nm}, nil
		}
		stored, err := a.append(ctx, nm)
		if err != nil {
			return last, nil, err
		}
		a.noteResult(ctx, c, res, nm.Content, time.Since(start))
		last = stored.Seq
		if a.interrupted(ctx) {
			a.answerNotRun(ctx, assistantSeq, calls[i+1:])
			return last, nil, errInterrupted
		}
	}
	return last, nil, nil
}

// resultMemory is one call's result as stored, keyed by the assistant message and the call id: whoever stores
// first (this actor, a retry, a replica racing for the mysis) wins and the others get that row back, so a call is
// answered exactly once.
//
// The result is shown to the model and stored (searchable, shown to the commander): the runner's own secrets never
// stay in it, and an error (a game or transport failure quoting a request) loses every secret shape too. A
// successful result keeps its shapes: a game field called "token" may be an item.
func (a *Actor) resultMemory(assistantSeq int64, c chat.ToolCall, res ToolResult) NewMemory {
	content := a.red().Values(res.Content)
	if res.IsError {
		content = redact.Shapes(content)
	}
	if content == "" {
		content = "(empty result)"
	}
	return NewMemory{
		Role: chat.RoleTool, Source: SourceTool, Content: content, ToolCallID: c.ID, ToolName: c.Name,
		CallArguments: c.Arguments, IdempotencyKey: fmt.Sprintf("tool:%s:%d:%s", a.id, assistantSeq, c.ID),
	}
}

// noteResult announces a finished call: event, metrics, live status.
func (a *Actor) noteResult(ctx context.Context, c chat.ToolCall, res ToolResult, content string, took time.Duration) {
	a.publish(ctx, Event{Kind: EventToolCalled, Tool: c.Name, CallID: c.ID, IsError: res.IsError, Duration: took, Excerpt: truncate(content, 200)})
	a.metrics.ToolCalled(ctx, c.Name, res.IsError, took)
	a.setStatus(func(s *Status) {
		s.LastAction, s.LastActionAt = callLabel(c), time.Now()
		if res.Credits != nil {
			s.Credits = *res.Credits
		}
		if res.Ship != nil {
			s.Ship = res.Ship
		}
	})
}

// storeResult stores one call's result and announces it.
func (a *Actor) storeResult(ctx context.Context, assistantSeq int64, c chat.ToolCall, res ToolResult, took time.Duration) (Memory, error) {
	nm := a.resultMemory(assistantSeq, c, res)
	stored, err := a.append(ctx, nm)
	if err != nil {
		return Memory{}, err
	}
	a.noteResult(ctx, c, res, nm.Content, took)
	return stored, nil
}

// settleStopped makes sure a stopped mysis has no tool call without a result (answerStopped) and records how far its
// history is known to be complete (settledSeq). Once it is, what arrives while the mysis stays stopped is commander
// prompts, which open no call: when every memory stored since is a prompt, one short read says so and the window
// is not read again for each broadcast.
func (a *Actor) settleStopped(ctx context.Context, m Mysis) error {
	if since := m.LastSeq - a.settledSeq; a.settledSeq > 0 && since > 0 && since <= maxResumeWindow {
		recent, err := a.deps.Store.Recent(ctx, a.id, int(since))
		if err != nil {
			return fmt.Errorf("read memories: %w", err)
		}
		// Oldest first; it must reach back to the first memory after settledSeq (more may have arrived since m).
		prompts := len(recent) > 0 && recent[0].Seq == a.settledSeq+1
		for _, r := range recent {
			prompts = prompts && r.Role == chat.RoleUser
		}
		if prompts {
			a.settledSeq = recent[len(recent)-1].Seq
			return nil
		}
	}
	seq, err := a.answerStopped(ctx, m)
	if err != nil {
		return err
	}
	a.settledSeq = max(seq, m.LastSeq)
	return nil
}

// answerStopped answers the tool calls a cut loop left without a result on a mysis that is stopped, without running
// any of them: a stopped mysis does not act in the game, and it runs no turn (so no resume) until it is started
// again, which may be never. The owner died, lost its lease or failed in transport during the first unanswered call
// (calls run one at a time, each result stored before the next starts), so that one is answered InterruptedResult;
// the later ones never started and are answered NotRunResult; a call the model got wrong gets its tool error, as
// execCalls gives it. Each answer is stored under the call's idempotency key, like every result: a resume after a
// start, or a former owner finishing the call late, gets this row back instead of writing a second one, so every
// call keeps exactly one result. It returns the newest seq it saw or stored.
func (a *Actor) answerStopped(ctx context.Context, m Mysis) (int64, error) {
	rp, err := a.resumePoint(ctx, m)
	if err != nil {
		return 0, err
	}
	last := rp.lastSeq
	problems := storedProblems(rp.calls, a.cfg.MaxCallsPerReply)
	for i, c := range rp.unanswered {
		res := ToolResult{Content: NotRunResult, IsError: true}
		if msg, bad := problems[c.ID]; bad {
			res.Content = msg
		} else if i == 0 {
			res.Content = InterruptedResult
		}
		stored, err := a.storeResult(ctx, rp.assistantSeq, c, res, 0)
		if err != nil {
			return 0, err
		}
		last = max(last, stored.Seq)
		a.log.Info("cut tool call of a stopped mysis answered without running it", "tool", c.Name, "call_id", c.ID, "result", res.Content)
	}
	return last, nil
}

// answerNotRun answers calls that a stop cut off before they started with NotRunResult. Only this actor knows that
// they never ran; stored now, the next owner finds a complete loop instead of calls it would have to treat as
// "result unknown". When ctx is over (lease lost, forced shutdown) nothing is written: the calls stay unanswered
// and the next owner's resume answers them. Best effort for the same reason.
func (a *Actor) answerNotRun(ctx context.Context, assistantSeq int64, calls []chat.ToolCall) {
	for _, c := range calls {
		if ctx.Err() != nil {
			return
		}
		if _, err := a.storeResult(ctx, assistantSeq, c, ToolResult{Content: NotRunResult, IsError: true}, 0); err != nil {
			a.log.Debug("could not answer a call cut off by a stop", "tool", c.Name, "call_id", c.ID, "err", err)
			return
		}
	}
}

// interrupted is the safe point check: after every LLM call and tool, a pending stop or delete is honoured.
func (a *Actor) interrupted(ctx context.Context) bool {
	if ctx.Err() != nil || a.stopping.Load() {
		return true
	}
	if !a.takeControl() {
		return false
	}
	m, err := a.deps.Store.GetMysis(ctx, a.id)
	if errs.Is(err, errs.NotFound) {
		return true
	}
	if err != nil {
		return false // cannot tell; the next turn start re-reads the state
	}
	return m.State != StateRunning
}

// append stores one memory and announces it.
func (a *Actor) append(ctx context.Context, nm NewMemory) (Memory, error) {
	return a.appendIf(ctx, nm, AppendCondition{})
}

// appendIf stores one memory under a condition (none when c is zero) and announces it. ErrPromptArrived comes back
// unwrapped.
func (a *Actor) appendIf(ctx context.Context, nm NewMemory, c AppendCondition) (Memory, error) {
	var stored []Memory
	var err error
	if c.IfNoPromptAfter == nil && c.State == nil {
		stored, err = a.deps.Store.Append(ctx, a.id, []NewMemory{nm})
	} else {
		stored, err = a.deps.Store.AppendIf(ctx, a.id, []NewMemory{nm}, c)
	}
	if errors.Is(err, ErrPromptArrived) {
		return Memory{}, ErrPromptArrived
	}
	if errs.IsKeyReused(err) {
		return Memory{}, keyTaken(nm)
	}
	if err != nil {
		return Memory{}, fmt.Errorf("append %s memory: %w", nm.Role, err)
	}
	if len(stored) != 1 {
		return Memory{}, fmt.Errorf("append %s memory: store returned %d rows", nm.Role, len(stored))
	}
	m := stored[0]
	a.publish(ctx, Event{Kind: EventMemoryAppended, MemoryIDs: []int64{m.ID}, Seqs: []int64{m.Seq}, Role: m.Role, Excerpt: truncate(m.Content, 200)})
	return m, nil
}

// errKeyTaken ends a turn whose memory could not be stored because its idempotency key already holds a memory with
// other content (the memory service refuses it: errs.ReasonIdempotencyKeyReused). Every key the actor uses names
// one slot of the history — the reply to what the model saw at a seq, the result of one call, the nudge of one turn
// — and this actor writes each slot with one payload, retries included, so another writer filled it first: a
// replica that owned the mysis at the same time (a lease hand-over) or a former owner finishing a call late, while
// this one answered it "result unknown" (answerStopped). What is stored stands. The turn ends as interrupted, and
// the next one resumes from the stored history: continuing with a row that says something else than what this
// actor meant to store would act on a reply or a result the history does not hold.
var errKeyTaken = fmt.Errorf("%w: another writer stored this memory first", errInterrupted)

// keyTaken is errKeyTaken for nm.
func keyTaken(nm NewMemory) error {
	return fmt.Errorf("%w (%s memory %s)", errKeyTaken, nm.Role, nm.IdempotencyKey)
}

// label summarises an assistant reply for the status line.
func label(m Memory) string {
	if len(m.ToolCalls) == 0 {
		return "reply"
	}
	names := make([]string, len(m.ToolCalls))
	for i, c := range m.ToolCalls {
		names[i] = c.Name
	}
	return "calls " + strings.Join(names, ",")
}

// callLabel is e.g. "travel main_belt": the tool and its string arguments.
func callLabel(c chat.ToolCall) string {
	var args map[string]any
	if json.Unmarshal([]byte(c.Arguments), &args) != nil || len(args) == 0 {
		return c.Name
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := []string{c.Name}
	for _, k := range keys {
		switch v := args[k].(type) {
		case string:
			parts = append(parts, truncate(v, 40))
		case float64:
			parts = append(parts, fmt.Sprint(v))
		}
	}
	return strings.Join(parts, " ")
}
