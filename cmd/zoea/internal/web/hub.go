package web

import (
	"context"
	"encoding/json"
	"log/slog"
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
)

// hub is the console's one watch of the bus's event stream, shared by every open page. Each event is remembered for
// its mysis's timeline and sent to every page; the mysis concerned (and only it) is then read again, once per burst,
// and its new row sent too. No page ever reads the whole swarm to stay current.
type hub struct {
	b       backend.Backend
	now     func() time.Time
	timeout time.Duration
	log     *slog.Logger

	mu       sync.Mutex
	subs     map[chan []byte]struct{}
	events   map[string][]eventLine
	fetching map[string]bool // a Get is in flight
	again    map[string]bool // an event came while it was: read once more
	live     bool
	watchErr string
	ctx      context.Context

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

func newHub(b backend.Backend, now func() time.Time, timeout time.Duration, log *slog.Logger) *hub {
	return &hub{b: b, now: now, timeout: timeout, log: log, subs: map[chan []byte]struct{}{},
		events: map[string][]eventLine{}, fetching: map[string]bool{}, again: map[string]bool{}, ctx: context.Background(),
		watchErr: "connecting to the bus's event stream"} // until run has started watching: "not live" says why
}

// run watches until ctx ends; a failed stream is opened again after a pause.
func (h *hub) run(ctx context.Context) {
	h.mu.Lock()
	h.ctx = ctx
	h.mu.Unlock()
	for ctx.Err() == nil {
		h.setLive(true, "")
		err := h.b.Watch(ctx, h.onEvent)
		if ctx.Err() != nil {
			return
		}
		msg := "the event stream ended"
		if err != nil {
			msg = present.Explain(err, present.Subject{Service: "bus"}).Error()
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
	h.publish("live", map[string]any{"live": live, "why": why})
}

func (h *hub) status() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.live, h.watchErr
}

func (h *hub) subscribe() chan []byte {
	c := make(chan []byte, subscriberBuf)
	h.mu.Lock()
	h.subs[c] = struct{}{}
	h.mu.Unlock()
	return c
}

func (h *hub) unsubscribe(c chan []byte) {
	h.mu.Lock()
	delete(h.subs, c)
	h.mu.Unlock()
}

// publish sends one server-sent event to every page. A page that has fallen subscriberBuf messages behind is sent
// nothing more but a "reload": it reads its page again rather than show a table with holes.
func (h *hub) publish(kind string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		return
	}
	msg := []byte("event: " + kind + "\ndata: " + string(data) + "\n\n")
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.subs {
		select {
		case c <- msg:
		default:
			delete(h.subs, c)
			close(c)
		}
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

func (h *hub) onEvent(e *busv1.Event) {
	id := e.GetMysisId()
	at := h.now()
	if e.GetAt() != nil {
		at = e.GetAt().AsTime()
	}
	line := eventLine{At: at, Kind: eventKind(e), Text: present.Event(e)} // present.Event escapes model text
	h.mu.Lock()
	list := append(h.events[id], line)
	if len(list) > eventsKept {
		list = list[len(list)-eventsKept:]
	}
	h.events[id] = list
	if st := h.rows[id]; st != nil {
		// A kept status is never changed in place: pages render them and row events are built from them outside
		// the lock (swarm, refresh), so an event replaces the status with an amended copy.
		st = proto.Clone(st).(*runnerv1.MysisStatus)
		applyEvent(st, e)
		h.rows[id] = st
	} else if id != "" {
		h.complete = false // a mysis the list does not know: created elsewhere
	}
	h.mu.Unlock()
	msg := map[string]any{"id": id, "at": at.UTC().Format(time.TimeOnly), "kind": line.Kind, "text": line.Text}
	switch p := e.GetPayload().(type) { // what the row shows at once, before the mysis is read again
	case *busv1.Event_StateChanged:
		msg["state"] = present.State(p.StateChanged.GetTo())
	case *busv1.Event_ToolCalled:
		msg["action"] = present.Clip(present.OneLine(p.ToolCalled.GetTool()), 40)
	case *busv1.Event_Error:
		msg["error"] = present.Clip(present.OneLine(p.Error.GetMessage()), maxError)
	}
	h.publish("event", msg)
	if id != "" {
		h.refresh(id)
	}
}

// refresh reads mysis id again and sends its row; events arriving meanwhile cause one more read, not one each.
func (h *hub) refresh(id string) {
	h.mu.Lock()
	if h.fetching[id] {
		h.again[id] = true
		h.mu.Unlock()
		return
	}
	h.fetching[id] = true
	ctx := h.ctx
	h.mu.Unlock()
	go func() {
		for {
			cctx, cancel := context.WithTimeout(ctx, h.timeout)
			st, err := h.b.Get(cctx, id)
			cancel()
			switch {
			case err == nil:
				h.mu.Lock()
				if h.rows != nil {
					h.rows[id] = st
				}
				h.mu.Unlock()
				h.publish("row", rowOf(st))
			case isNotFound(err):
				h.mu.Lock()
				delete(h.rows, id)
				h.mu.Unlock()
				h.publish("gone", map[string]any{"id": id})
			default:
				h.log.Warn("read a mysis after an event", "mysis", id, "err", err)
			}
			h.mu.Lock()
			if !h.again[id] || ctx.Err() != nil {
				delete(h.fetching, id)
				delete(h.again, id)
				h.mu.Unlock()
				return
			}
			delete(h.again, id)
			h.mu.Unlock()
		}
	}()
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
