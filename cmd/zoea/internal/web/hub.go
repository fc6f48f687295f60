package web

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/backend"
	"github.com/zoeaswarm/zoea/cmd/zoea/internal/present"
	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
)

const (
	eventsKept    = 200 // events remembered per mysis for its timeline
	subscriberBuf = 512 // messages an open page may fall behind before it is told to reload

	// flushEvery is how often pages are sent what changed: every row at most this often, however fast its mysis's
	// events come (a swarm of thousands sends hundreds a second); the first event after a quiet spell goes out at
	// once.
	flushEvery = 250 * time.Millisecond
	// refreshEvery is how often a shown mysis that had events is read again for what events do not carry (credits,
	// turns, usage): a read per shown mysis per refreshEvery at most, never one per event, never for rows no page shows.
	refreshEvery = 5 * time.Second
	// refreshers bounds the reads in flight.
	refreshers = 4
)

// hub is the console's one watch of the bus's event stream, shared by every open page. Each event is remembered for
// its mysis's timeline and folded into the kept row; every flushEvery each page is sent what changed among the
// things it shows (its scope): the swarm page its rows, the header counts and new or deleted myses; a mysis page that
// mysis's row and events. A shown mysis is read again at most every refreshEvery for what events do not carry. No
// page ever reads the whole swarm to stay current, and no event costs a read.
type hub struct {
	b       backend.Backend
	now     func() time.Time
	timeout time.Duration
	log     *slog.Logger

	mu       sync.Mutex
	subs     map[*sub]struct{}
	events   map[string][]eventLine
	live     bool
	watchErr string
	ctx      context.Context

	dirty    map[string]bool             // rows changed since the last flush
	lines    map[string][]map[string]any // timeline lines since the last flush, for the mysis pages
	stale    map[string]bool             // shown myses with events since they were last read
	unknown  map[string]bool             // ids an event named that the kept list lacks: read to show them (new)
	reading  map[string]bool             // a read is in flight
	gone     []string                    // deleted since the last flush
	added    []row                       // created (first seen) since the last flush
	counts   string                      // the header counts last sent
	readHook func(id string)             // tests: called after each read has been folded in
	kick     chan struct{}               // an event arrived: flush now if the last flush is flushEvery old
	flushed  time.Time                   // when the last flush ran
	busAddr  string                      // for the sentence a broken stream shows

	// The swarm as last listed and kept current by events: the swarm page renders from it while the stream is live
	// and the list is younger than listFresh, instead of asking the runner for every mysis on each load.
	rows     map[string]*runnerv1.MysisStatus
	listedAt time.Time
	complete bool // no event since the list was taken is unaccounted for
}

// listFresh is how long a list kept current by events serves the swarm page before it is read whole again.
const listFresh = time.Minute

type eventLine struct {
	At   time.Time
	Kind string
	Text string
}

// scope is what one open page shows, so it is sent nothing else: the swarm page its rows (ids), the counts and the
// swarm's new and deleted myses; a mysis page (mysis) that mysis; any other page only whether the console is live.
type scope struct {
	swarm bool
	ids   map[string]bool
	mysis string
}

func (sc scope) shows(id string) bool { return sc.mysis == id || sc.ids[id] }

// sub is one open page's stream.
type sub struct {
	c     chan []byte
	scope scope
}

func newHub(b backend.Backend, now func() time.Time, timeout time.Duration, log *slog.Logger) *hub {
	return &hub{b: b, now: now, timeout: timeout, log: log, subs: map[*sub]struct{}{},
		events: map[string][]eventLine{}, ctx: context.Background(),
		kick: make(chan struct{}, 1), rows: map[string]*runnerv1.MysisStatus{}, dirty: map[string]bool{}, lines: map[string][]map[string]any{}, stale: map[string]bool{}, unknown: map[string]bool{}, reading: map[string]bool{},
		watchErr: "connecting to the bus's event stream"} // until the stream is open: "not live" says why
}

// run watches until ctx ends (a failed stream is opened again after a pause), sends pages what changed every
// flushEvery and reads shown myses again every refreshEvery.
func (h *hub) run(ctx context.Context) {
	h.mu.Lock()
	h.ctx = ctx
	h.mu.Unlock()
	go func() {
		flush, refresh := time.NewTicker(flushEvery), time.NewTicker(refreshEvery)
		defer flush.Stop()
		defer refresh.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-flush.C:
				h.flush()
			case <-h.kick:
				// The first event after a quiet spell goes out at once; a burst waits for the ticker, so a row
				// still changes at most about once per flushEvery.
				h.mu.Lock()
				idle := h.now().Sub(h.flushed) >= flushEvery
				h.mu.Unlock()
				if idle {
					h.flush()
				}
			case <-refresh.C:
				h.refreshShown()
			}
		}
	}()
	for ctx.Err() == nil {
		// Live once the bus has accepted the watch (its stream's headers), not before.
		err := h.b.Watch(ctx, func() { h.setLive(true, "") }, h.onEvent)
		if ctx.Err() != nil {
			return
		}
		msg := "the event stream ended"
		if err != nil {
			msg = present.Explain(err, present.Subject{Service: "bus", Addr: h.busAddr}).Error()
		}
		h.log.Warn("event stream failed; watching again in 2s", "err", msg)
		h.setLive(false, msg)
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
}

func (h *hub) setLive(live bool, why string) {
	h.mu.Lock()
	h.live, h.watchErr = live, why
	h.complete = false // events may have been missed while the stream was down
	h.mu.Unlock()
	h.publish(func(scope) bool { return true }, "live", map[string]any{"live": live, "why": why})
}

func (h *hub) status() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.live, h.watchErr
}

// subscribe opens a page's stream; a mysis page's mysis is read at once unless its row is kept, so its row follows
// at the next flush.
func (h *hub) subscribe(sc scope) *sub {
	s := &sub{c: make(chan []byte, subscriberBuf), scope: sc}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	_, kept := h.rows[sc.mysis]
	h.mu.Unlock()
	if sc.mysis != "" && !kept {
		h.read([]string{sc.mysis})
	}
	return s
}

func (h *hub) unsubscribe(s *sub) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
}

// sse is one server-sent event.
func sse(kind string, v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return []byte("event: " + kind + "\ndata: " + string(data) + "\n\n")
}

// publish sends one server-sent event to every page whose scope wants it.
func (h *hub) publish(wants func(scope) bool, kind string, v any) {
	msg := sse(kind, v)
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if wants(s.scope) {
			h.send(s, msg)
		}
	}
}

// send queues msg for one page (h.mu held). A page that has fallen subscriberBuf messages behind is sent nothing more
// but a "reload": it reads its page again rather than show a table with holes.
func (h *hub) send(s *sub, msg []byte) {
	select {
	case s.c <- msg:
	default:
		delete(h.subs, s)
		close(s.c)
	}
}

// timeline is a mysis's remembered events, newest first.
func (h *hub) timeline(id string) []eventLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	list := h.events[id]
	out := make([]eventLine, len(list))
	for i, e := range list {
		out[len(list)-1-i] = e
	}
	return out
}

func eventKind(e *busv1.Event) string {
	switch e.GetPayload().(type) {
	case *busv1.Event_StateChanged:
		return "state"
	case *busv1.Event_ToolCalled:
		return "tool"
	case *busv1.Event_MemoryAppended:
		return "memory"
	case *busv1.Event_Error:
		return "error"
	case *busv1.Event_Broadcast:
		return "broadcast"
	}
	return "other"
}

// onEvent remembers an event for its mysis's timeline and folds it into the kept row; the pages hear of it at the
// next flush.
func (h *hub) onEvent(e *busv1.Event) {
	id := e.GetMysisId()
	at := h.now()
	if e.GetAt() != nil {
		at = e.GetAt().AsTime()
	}
	line := eventLine{At: at, Kind: eventKind(e), Text: present.Event(e)} // present.Event escapes model text
	msg := map[string]any{"id": id, "at": at.UTC().Format(time.TimeOnly), "kind": line.Kind, "text": line.Text}
	defer func() { // after the unlock below: the flush it may start sees this event
		select {
		case h.kick <- struct{}{}:
		default:
		}
	}()
	h.mu.Lock()
	defer h.mu.Unlock()
	list := append(h.events[id], line)
	if len(list) > eventsKept {
		list = list[len(list)-eventsKept:]
	}
	h.events[id] = list
	if id == "" {
		return
	}
	if pending := append(h.lines[id], msg); len(pending) <= eventsKept {
		h.lines[id] = pending
	}
	h.stale[id] = true
	if st := h.rows[id]; st != nil {
		// A kept status is never changed in place: pages render them and rows are built from them outside the
		// lock (swarm), so an event replaces the status with an amended copy.
		st = proto.Clone(st).(*runnerv1.MysisStatus)
		applyEvent(st, e)
		h.rows[id] = st
		h.dirty[id] = true
	} else if !h.listedAt.IsZero() {
		h.unknown[id] = true // a mysis the list does not know: created elsewhere; read to show it
	}
}

// flush sends every page what changed among the things it shows since the last flush: one row per changed mysis
// (however many events it had), its events to its mysis page, new and deleted myses and the header counts to swarm
// pages; then it reads the myses first seen in events.
func (h *hub) flush() {
	h.mu.Lock()
	changed := len(h.dirty)+len(h.lines)+len(h.gone)+len(h.added) > 0
	if changed {
		h.flushed = h.now() // a flush that sent something: the next event waits for the ticker
	}
	dirty, lines, gone, added := h.dirty, h.lines, h.gone, h.added
	h.dirty, h.lines, h.gone, h.added = map[string]bool{}, map[string][]map[string]any{}, nil, nil
	rows := make(map[string][]byte, len(dirty))
	for id := range dirty {
		if st := h.rows[id]; st != nil {
			rows[id] = sse("row", rowOf(st))
		}
	}
	// The counts change only with a row (or a list kept): a quiet tick does not walk the swarm.
	counts := h.counts
	if !h.listedAt.IsZero() && (changed || h.counts == "") {
		counts = countsOf(h.rows)
	}
	countsMsg := []byte(nil)
	if counts != h.counts {
		h.counts = counts
		countsMsg = []byte("event: counts\ndata: " + counts + "\n\n")
	}
	var goneMsgs, addedMsgs [][]byte
	for _, id := range gone {
		goneMsgs = append(goneMsgs, sse("gone", map[string]any{"id": id}))
	}
	for _, r := range added {
		addedMsgs = append(addedMsgs, sse("new", r))
	}
	for s := range h.subs {
		sc := s.scope
		for id := range dirty {
			if sc.shows(id) && rows[id] != nil {
				h.send(s, rows[id])
			}
		}
		if sc.mysis != "" {
			for _, l := range lines[sc.mysis] {
				h.send(s, sse("event", l))
			}
		}
		if !sc.swarm {
			continue
		}
		for _, m := range addedMsgs {
			h.send(s, m)
		}
		for _, m := range goneMsgs {
			h.send(s, m)
		}
		if countsMsg != nil {
			h.send(s, countsMsg)
		}
	}
	var learn []string
	for id := range h.unknown {
		if !h.reading[id] {
			learn = append(learn, id)
		}
	}
	h.mu.Unlock()
	h.read(learn)
}

// refreshShown reads again the myses some page shows that had events since they were last read.
func (h *hub) refreshShown() {
	h.mu.Lock()
	var ids []string
	for id := range h.stale {
		for s := range h.subs {
			if s.scope.shows(id) && !h.reading[id] {
				ids = append(ids, id)
				break
			}
		}
	}
	h.mu.Unlock()
	h.read(ids)
}

// read reads myses again, refreshers at a time, and marks their rows changed (or the mysis gone); it returns at once.
func (h *hub) read(ids []string) {
	if len(ids) == 0 {
		return
	}
	h.mu.Lock()
	for _, id := range ids {
		h.reading[id] = true
		delete(h.stale, id)
	}
	ctx := h.ctx
	h.mu.Unlock()
	work := make(chan string)
	go func() {
		defer close(work)
		for _, id := range ids {
			select {
			case work <- id:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range min(refreshers, len(ids)) {
		go func() {
			for id := range work {
				h.readOne(ctx, id)
			}
		}()
	}
}

func (h *hub) readOne(ctx context.Context, id string) {
	cctx, cancel := context.WithTimeout(ctx, h.timeout)
	st, err := h.b.Get(cctx, id)
	cancel()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.readHook != nil {
		defer h.readHook(id)
	}
	delete(h.reading, id)
	_, wasUnknown := h.unknown[id]
	delete(h.unknown, id)
	switch {
	case err == nil:
		_, had := h.rows[id]
		h.rows[id] = st
		if !had && wasUnknown {
			h.added = append(h.added, rowOf(st))
		}
		h.dirty[id] = true
	case isNotFound(err):
		if _, had := h.rows[id]; had || !wasUnknown {
			h.gone = append(h.gone, id)
		}
		delete(h.rows, id)
	default:
		h.log.Warn("read a mysis after its events", "mysis", id, "err", err)
	}
}

// countsOf is the swarm page's header counts as a JSON object: the total and "3 running · 1 idle".
func countsOf(rows map[string]*runnerv1.MysisStatus) string {
	counts := map[string]int{}
	for _, st := range rows {
		counts[present.State(st.GetMysis().GetState())]++
	}
	b, _ := json.Marshal(map[string]any{"total": len(rows), "states": stateCounts(counts)})
	return string(b)
}

// stateCounts is "3 running · 1 idle" in the header's order, leaving out states no mysis is in.
func stateCounts(counts map[string]int) string {
	var states []string
	for _, k := range []string{"running", "idle", "stopped", "errored"} {
		if counts[k] > 0 {
			states = append(states, strconv.Itoa(counts[k])+" "+k)
		}
	}
	return strings.Join(states, " · ")
}

// row is one line of the swarm table, as the page shows it and as a "row" event carries it.
type row struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	State     string `json:"state"`
	Reason    string `json:"reason"`
	Provider  string `json:"provider"`
	Model     string `json:"model"`
	Credits   string `json:"credits"`
	Turns     int64  `json:"turns"`
	Tokens    string `json:"tokens"`
	Cost      string `json:"cost"`
	Action    string `json:"action"`
	Where     string `json:"where"`
	Cargo     string `json:"cargo"`
	LastError string `json:"error"`
	Owner     string `json:"owner"`

	credits, tokens, costNanos int64
}

// rowOf is a mysis's row with every text a model or a person wrote made safe to show (present.Safe); the page's
// escaping (html/template, or textContent in the script) does the rest.
func rowOf(st *runnerv1.MysisStatus) row {
	m := st.GetMysis()
	tokens, cost := present.UsageCompact(st)
	u := st.GetUsage()
	return row{
		ID: m.GetId(), Name: present.Safe(m.GetName()), State: present.State(m.GetState()), Reason: present.OneLine(m.GetStateReason()),
		Provider: present.Safe(m.GetProvider()), Model: present.Safe(m.GetModel()), Credits: present.Credits(st),
		Turns: m.GetCurrentTurn(), Tokens: tokens, Cost: cost, Action: present.Clip(present.OneLine(st.GetLastAction()), 40),
		Where: present.Clip(present.Where(st), 40), Cargo: present.Cargo(st),
		LastError: present.Clip(present.OneLine(present.LastError(st)), maxError), Owner: present.Safe(st.GetOwner()),
		credits: st.GetCredits(), tokens: u.GetPromptTokens() + u.GetCompletionTokens(), costNanos: u.GetCostNanos(),
	}
}

func isNotFound(err error) bool { return status.Code(err) == codes.NotFound }

// applyEvent folds what an event says into a kept status (the read that follows brings the rest).
func applyEvent(st *runnerv1.MysisStatus, e *busv1.Event) {
	switch p := e.GetPayload().(type) {
	case *busv1.Event_StateChanged:
		if st.Mysis != nil {
			st.Mysis.State, st.Mysis.StateReason = p.StateChanged.GetTo(), p.StateChanged.GetReason()
		}
	case *busv1.Event_ToolCalled:
		st.LastAction = p.ToolCalled.GetTool()
	case *busv1.Event_Error:
		st.LastError = p.Error.GetMessage()
	}
}

// swarm is the kept list when it is current (the stream live, nothing missed, younger than listFresh).
func (h *hub) swarm() ([]*runnerv1.MysisStatus, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.live || !h.complete || h.now().Sub(h.listedAt) > listFresh {
		return nil, false
	}
	out := make([]*runnerv1.MysisStatus, 0, len(h.rows))
	for _, st := range h.rows {
		out = append(out, proto.Clone(st).(*runnerv1.MysisStatus))
	}
	return out, true
}

// keep stores a whole list read at start (taken before the read, so an event during it marks it incomplete only if
// it names a mysis the list lacks).
func (h *hub) keep(list []*runnerv1.MysisStatus, start time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rows = make(map[string]*runnerv1.MysisStatus, len(list))
	for _, st := range list {
		h.rows[st.GetMysis().GetId()] = proto.Clone(st).(*runnerv1.MysisStatus)
	}
	h.listedAt, h.complete = start, h.live
}

// forget makes the next swarm page read the whole list (after the commander changed the swarm).
func (h *hub) forget() {
	h.mu.Lock()
	h.complete = false
	h.mu.Unlock()
}

// maxError is how much of an error a row shows: enough for the cause at the end of a wrapped chain (the table wraps
// it), short of a runaway provider body.
const maxError = 1000
