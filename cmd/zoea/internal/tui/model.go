// Package tui is `zoea tui`, the commander's console: one screen with every mysis, updated from the bus's event
// stream, and single keys to create, broadcast, message, relaunch, stop, delete, configure, focus and preview. It is
// built on Bubble Tea (the update loop), Bubbles (text inputs, viewports, key help) and Lip Gloss (styles). It talks
// to the swarm through backend.Backend and takes its keys from internal/keytable, as the web console does.
package tui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/textinput"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/backend"
	"github.com/zoeaswarm/zoea/cmd/zoea/internal/keytable"
	"github.com/zoeaswarm/zoea/cmd/zoea/internal/present"
	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
)

type mode int

const (
	modeSwarm mode = iota
	modeFocus
	modePreview
	modeHelp
	modeInput   // one-line input: broadcast, message, filter
	modeForm    // create or configure form
	modeConfirm // delete confirmation
)

type inputKind int

const (
	inputBroadcast inputKind = iota
	inputMessage
	inputFilter
)

// sort orders of the swarm table, cycled with o.
var sortNames = []string{"name", "state", "turns", "credits", "last action"}

const (
	eventsKept   = 200 // events remembered per mysis for the focus view
	historyShown = 15
)

// Options configure the console.
type Options struct {
	// Title heads the screen (default "Zoea").
	Title string
	// Now is the clock for event times (default time.Now); tests fix it.
	Now func() time.Time
	// CallTimeout bounds each call (default 30s).
	CallTimeout time.Duration
	// Notices, when set, are lines from outside the console (zoea dev: a service started again), shown as they come.
	Notices <-chan string
}

// Model is the console's state. Create it with New and run it with tea.NewProgram.
type Model struct {
	ctx  context.Context
	b    backend.Backend
	opts Options

	width, height int
	mode, back    mode

	rows     map[string]*runnerv1.MysisStatus // by mysis id
	loaded   bool
	selected string // id of the selected mysis
	sortBy   int
	filter   string
	refresh  map[string]bool // myses whose status is being fetched after an event
	events   map[string][]eventLine
	live     bool // the event stream is open
	watchErr string

	input     textinput.Model
	inputKind inputKind
	inputFor  string // mysis id a message goes to

	form       []textinput.Model
	formLabels []string
	formFocus  int
	formFor    string // mysis id being configured; "" creates
	formWas    []string

	confirmFor string

	focus    string // mysis id of the focus view
	history  []*memoryv1.Memory
	histErr  string
	preview  *present.Preview
	prevFor  string
	prevErr  string
	viewport viewport.Model
	flash    string
	flashErr bool
	eventsIn chan *busv1.Event
	quitting bool
	keys     keyMap
}

type eventLine struct {
	at   time.Time
	text string
}

// New returns the console for b. ctx bounds its calls and the event stream.
func New(ctx context.Context, b backend.Backend, opts Options) *Model {
	if opts.Title == "" {
		opts.Title = "Zoea"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 30 * time.Second
	}
	in := textinput.New()
	in.CharLimit = 16 << 10
	m := &Model{
		ctx: ctx, b: b, opts: opts, width: 100, height: 30,
		rows: map[string]*runnerv1.MysisStatus{}, refresh: map[string]bool{}, events: map[string][]eventLine{},
		input: in, eventsIn: make(chan *busv1.Event, 1024), keys: defaultKeys(),
		viewport: viewport.New(100, 20),
	}
	return m
}

// messages of the update loop
type (
	listMsg struct {
		list []*runnerv1.MysisStatus
		err  error
	}
	statusMsg struct {
		id  string
		st  *runnerv1.MysisStatus
		err error
	}
	eventMsg     struct{ e *busv1.Event }
	watchDoneMsg struct{ err error }
	rewatchMsg   struct{}
	actionMsg    struct {
		text    string
		err     error
		subject present.Subject
		list    []*runnerv1.MysisStatus
		listed  bool
	}
	historyMsg struct {
		id   string
		mems []*memoryv1.Memory
		err  error
	}
	previewMsg struct {
		id      string
		resp    *runnerv1.PreviewContextResponse
		running bool
		err     error
	}
)

// Init implements tea.Model: load the swarm and start the event stream.
func (m *Model) Init() tea.Cmd {
	m.live = true
	return tea.Batch(m.loadList(), m.watch(), m.nextEvent(), m.nextNotice())
}

// noticeMsg is a line from Options.Notices.
type noticeMsg struct{ text string }

func (m *Model) nextNotice() tea.Cmd {
	if m.opts.Notices == nil {
		return nil
	}
	return func() tea.Msg {
		select {
		case n, ok := <-m.opts.Notices:
			if !ok {
				return nil
			}
			return noticeMsg{n}
		case <-m.ctx.Done():
			return nil
		}
	}
}

func (m *Model) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(m.ctx, m.opts.CallTimeout)
}

func (m *Model) loadList() tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := m.call()
		defer cancel()
		list, err := m.b.List(ctx)
		return listMsg{list, err}
	}
}

func (m *Model) loadOne(id string) tea.Cmd {
	if m.refresh[id] {
		return nil
	}
	m.refresh[id] = true
	return func() tea.Msg {
		ctx, cancel := m.call()
		defer cancel()
		st, err := m.b.Get(ctx, id)
		return statusMsg{id, st, err}
	}
}

// watch runs the event stream; events go through a channel so the stream never waits on the screen.
func (m *Model) watch() tea.Cmd {
	return func() tea.Msg {
		err := m.b.Watch(m.ctx, nil, func(e *busv1.Event) {
			select {
			case m.eventsIn <- e:
			case <-m.ctx.Done():
			}
		})
		return watchDoneMsg{err}
	}
}

func (m *Model) nextEvent() tea.Cmd {
	return func() tea.Msg {
		select {
		case e := <-m.eventsIn:
			return eventMsg{e}
		case <-m.ctx.Done():
			return nil
		}
	}
}

func (m *Model) loadHistory(id string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := m.call()
		defer cancel()
		mems, err := m.b.History(ctx, id, historyShown)
		return historyMsg{id, mems, err}
	}
}

func (m *Model) loadPreview(id string) tea.Cmd {
	running := m.rows[id].GetMysis().GetState() == memoryv1.MysisState_MYSIS_STATE_RUNNING
	return func() tea.Msg {
		ctx, cancel := m.call()
		defer cancel()
		resp, err := m.b.Preview(ctx, id)
		return previewMsg{id, resp, running, err}
	}
}

// act runs one command against the swarm and reports it on the status line.
func (m *Model) act(s present.Subject, fn func(ctx context.Context) (string, error)) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := m.call()
		defer cancel()
		text, err := fn(ctx)
		// The table is re-read in the same step, so the screen never shows "deleted x" next to x's row.
		list, lerr := m.b.List(ctx)
		return actionMsg{text: text, err: err, subject: s, list: list, listed: lerr == nil}
	}
}

func (m *Model) name(id string) string {
	if st, ok := m.rows[id]; ok {
		return st.GetMysis().GetName()
	}
	return id
}

func (m *Model) names() []string {
	var out []string
	for _, st := range m.rows {
		out = append(out, st.GetMysis().GetName())
	}
	slices.Sort(out)
	return out
}

func (m *Model) setFlash(text string, isErr bool) { m.flash, m.flashErr = text, isErr }

// Update implements tea.Model.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.layoutViewport()
		return m, nil
	case listMsg:
		if msg.err != nil {
			m.setFlash(present.Explain(msg.err, present.Subject{Service: "runner"}).Error(), true)
			return m, nil
		}
		m.loaded = true
		m.rows = map[string]*runnerv1.MysisStatus{}
		for _, st := range msg.list {
			m.rows[st.GetMysis().GetId()] = st
		}
		m.fixSelection()
		return m, nil
	case statusMsg:
		delete(m.refresh, msg.id)
		if msg.err == nil && msg.st != nil {
			m.rows[msg.id] = msg.st
		}
		if m.mode == modeFocus && m.focus == msg.id {
			m.layoutViewport()
		}
		return m, nil
	case eventMsg:
		return m, tea.Batch(m.onEvent(msg.e), m.nextEvent())
	case noticeMsg:
		m.setFlash(msg.text, false)
		return m, m.nextNotice()
	case watchDoneMsg:
		m.live = false
		if m.ctx.Err() != nil {
			return m, nil
		}
		if msg.err != nil {
			m.watchErr = present.Explain(msg.err, present.Subject{Service: "bus"}).Error()
		}
		return m, tea.Tick(2*time.Second, func(time.Time) tea.Msg { return rewatchMsg{} })
	case rewatchMsg:
		m.live = true
		return m, tea.Batch(m.watch(), m.loadList())
	case actionMsg:
		if msg.err != nil {
			if msg.subject.Mysis != "" {
				msg.subject.Known = m.names()
			}
			m.setFlash(present.Explain(msg.err, msg.subject).Error(), true)
		} else {
			m.setFlash(msg.text, false)
		}
		if msg.listed {
			m.Update(listMsg{list: msg.list})
		}
		return m, nil
	case historyMsg:
		if msg.id == m.focus {
			m.history, m.histErr = msg.mems, ""
			if msg.err != nil {
				m.histErr = present.Explain(msg.err, present.Subject{Service: "memory"}).Error()
			}
			m.layoutViewport()
		}
		return m, nil
	case previewMsg:
		if msg.id == m.prevFor {
			m.prevErr, m.preview = "", nil
			if msg.err != nil {
				m.prevErr = present.Explain(msg.err, present.Subject{Service: "runner", Mysis: m.name(msg.id)}).Error()
			} else {
				p := present.ExplainPreview(msg.resp, msg.running)
				m.preview = &p
			}
			m.layoutViewport()
			m.viewport.GotoTop()
		}
		return m, nil
	case tea.KeyMsg:
		return m.onKey(msg)
	}
	return m, nil
}

// onEvent folds one event into the table. Only the mysis concerned is re-read (turns and credits are not in the
// events), and only once per burst: the stream, not a poll, drives the screen.
func (m *Model) onEvent(e *busv1.Event) tea.Cmd {
	m.watchErr = ""
	id := e.GetMysisId()
	at := m.opts.Now()
	if e.GetAt() != nil {
		at = e.GetAt().AsTime()
	}
	list := append(m.events[id], eventLine{at, present.Event(e)})
	if len(list) > eventsKept {
		list = list[len(list)-eventsKept:]
	}
	m.events[id] = list
	st, known := m.rows[id]
	if !known {
		if !m.loaded || id == "" {
			return nil
		}
		return m.loadList() // a mysis created elsewhere
	}
	switch p := e.GetPayload().(type) {
	case *busv1.Event_StateChanged:
		st.Mysis.State, st.Mysis.StateReason = p.StateChanged.GetTo(), p.StateChanged.GetReason()
	case *busv1.Event_ToolCalled:
		st.LastAction = p.ToolCalled.GetTool()
	case *busv1.Event_Error:
		st.LastError = p.Error.GetMessage()
	}
	var cmds []tea.Cmd
	cmds = append(cmds, m.loadOne(id))
	if m.mode == modeFocus && m.focus == id {
		if _, ok := e.GetPayload().(*busv1.Event_MemoryAppended); ok {
			cmds = append(cmds, m.loadHistory(id))
		}
		m.layoutViewport()
	}
	return tea.Batch(cmds...)
}

// visible is the table's rows: filtered, then sorted.
func (m *Model) visible() []*runnerv1.MysisStatus {
	var out []*runnerv1.MysisStatus
	f := strings.ToLower(m.filter)
	for _, st := range m.rows {
		mm := st.GetMysis()
		if f != "" && !strings.Contains(strings.ToLower(strings.Join([]string{mm.GetName(), present.State(mm.GetState()),
			mm.GetProvider(), mm.GetModel(), st.GetLastAction(), st.GetLastError()}, " ")), f) {
			continue
		}
		out = append(out, st)
	}
	byName := func(a, b *runnerv1.MysisStatus) int {
		return cmp.Compare(a.GetMysis().GetName(), b.GetMysis().GetName())
	}
	slices.SortFunc(out, func(a, b *runnerv1.MysisStatus) int {
		var c int
		switch sortNames[m.sortBy] {
		case "state":
			c = cmp.Compare(present.State(a.GetMysis().GetState()), present.State(b.GetMysis().GetState()))
		case "turns":
			c = cmp.Compare(b.GetMysis().GetCurrentTurn(), a.GetMysis().GetCurrentTurn())
		case "credits":
			c = cmp.Compare(b.GetCredits(), a.GetCredits())
		case "last action":
			c = cmp.Compare(a.GetLastAction(), b.GetLastAction())
		}
		return cmp.Or(c, byName(a, b))
	})
	return out
}

func (m *Model) fixSelection() {
	vis := m.visible()
	for _, st := range vis {
		if st.GetMysis().GetId() == m.selected {
			return
		}
	}
	m.selected = ""
	if len(vis) > 0 {
		m.selected = vis[0].GetMysis().GetId()
	}
}

func (m *Model) moveSelection(d int) {
	vis := m.visible()
	if len(vis) == 0 {
		return
	}
	i := slices.IndexFunc(vis, func(st *runnerv1.MysisStatus) bool { return st.GetMysis().GetId() == m.selected })
	i = min(max(i+d, 0), len(vis)-1)
	m.selected = vis[i].GetMysis().GetId()
}

// target is the mysis a key acts on: the focused one in the focus and preview views, else the selected row.
func (m *Model) target() string {
	if (m.mode == modeFocus || m.mode == modePreview) && m.focus != "" {
		return m.focus
	}
	return m.selected
}

func (m *Model) onKey(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	if k.Type == tea.KeyCtrlC {
		m.quitting = true
		return m, tea.Quit
	}
	switch m.mode {
	case modeInput:
		return m.onInputKey(k)
	case modeForm:
		return m.onFormKey(k)
	case modeConfirm:
		return m.onConfirmKey(k)
	case modeHelp:
		m.mode = m.back
		return m, nil
	}
	act, bound := keytable.Lookup(k.String())
	if bound && !keytable.Of(act).OnMysis {
		if cmd, done := m.onSwarmKey(act); done {
			return m, cmd
		}
	}
	id := m.target()
	if id == "" {
		if m.mode == modeSwarm && len(k.Runes) > 0 {
			m.setFlash("no mysis selected: n creates one", true)
		}
		return m, nil
	}
	if bound && keytable.Of(act).OnMysis {
		if cmd, done := m.onMysisKey(act, id); done {
			return m, cmd
		}
	}
	if m.mode == modeFocus || m.mode == modePreview {
		var cmd tea.Cmd
		m.viewport, cmd = m.viewport.Update(k)
		return m, cmd
	}
	return m, nil
}

// onConfirmKey answers the delete question: only y deletes.
func (m *Model) onConfirmKey(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	id := m.confirmFor
	m.mode = m.back
	if k.String() != "y" && k.String() != "Y" {
		m.setFlash("not deleted: "+m.name(id)+" is kept", false)
		return m, nil
	}
	name := m.name(id)
	if m.focus == id {
		m.mode, m.focus = modeSwarm, ""
	}
	return m, m.act(present.Subject{Mysis: name, Service: "runner"}, func(ctx context.Context) (string, error) {
		return "deleted " + name, m.b.Delete(ctx, id)
	})
}

// onSwarmKey runs an action that needs no mysis; done is false when it does not apply in this view (the key then
// scrolls the focus or preview view).
func (m *Model) onSwarmKey(act keytable.Action) (cmd tea.Cmd, done bool) {
	inSwarm := m.mode == modeSwarm
	switch act {
	case keytable.Quit:
		if inSwarm {
			m.quitting = true
			return tea.Quit, true
		}
		m.mode = m.backFrom()
	case keytable.Back:
		if !inSwarm {
			m.mode = m.backFrom()
		} else if m.filter != "" {
			m.filter = ""
			m.fixSelection()
		}
	case keytable.Help:
		m.back, m.mode = m.mode, modeHelp
	case keytable.Up, keytable.Down, keytable.Sort, keytable.Filter:
		if !inSwarm {
			return nil, false
		}
		return m.onTableKey(act), true
	case keytable.New:
		return m.openForm(""), true
	case keytable.Broadcast:
		return m.openInput(inputBroadcast, "", ""), true
	}
	return nil, true
}

// onTableKey moves, sorts or filters the swarm table.
func (m *Model) onTableKey(act keytable.Action) tea.Cmd {
	switch act {
	case keytable.Up:
		m.moveSelection(-1)
	case keytable.Down:
		m.moveSelection(1)
	case keytable.Sort:
		m.sortBy = (m.sortBy + 1) % len(sortNames)
	case keytable.Filter:
		return m.openInput(inputFilter, "", m.filter)
	}
	return nil
}

// onMysisKey runs an action on mysis id; done is false when it does not apply in this view.
func (m *Model) onMysisKey(act keytable.Action, id string) (cmd tea.Cmd, done bool) {
	name := m.name(id)
	sub := present.Subject{Mysis: name, Service: "runner"}
	switch act {
	case keytable.Focus:
		if m.mode != modeSwarm {
			return nil, false
		}
		m.focus, m.mode, m.history, m.histErr = id, modeFocus, nil, ""
		m.layoutViewport()
		m.viewport.GotoTop()
		return tea.Batch(m.loadHistory(id), m.loadOne(id)), true
	case keytable.Preview:
		m.focus, m.prevFor, m.preview, m.prevErr = id, id, nil, ""
		if m.mode != modePreview {
			m.back = m.mode
		}
		m.mode = modePreview
		m.layoutViewport()
		return m.loadPreview(id), true
	case keytable.Message:
		return m.openInput(inputMessage, id, ""), true
	case keytable.Relaunch:
		return m.act(sub, func(ctx context.Context) (string, error) { return "started " + name, m.b.Start(ctx, id) }), true
	case keytable.Stop:
		return m.act(sub, func(ctx context.Context) (string, error) { return "stopped " + name, m.b.Stop(ctx, id) }), true
	case keytable.Delete:
		m.confirmFor, m.back, m.mode = id, m.mode, modeConfirm
		return nil, true
	case keytable.Configure:
		return m.openForm(id), true
	}
	return nil, false
}

func (m *Model) backFrom() mode {
	switch m.mode {
	case modePreview:
		if m.back == modeFocus {
			return modeFocus
		}
	}
	m.focus = ""
	return modeSwarm
}

func (m *Model) openInput(kind inputKind, id, value string) tea.Cmd {
	m.inputKind, m.inputFor = kind, id
	m.input.Reset()
	m.input.SetValue(value)
	m.input.Prompt = "> "
	switch kind {
	case inputBroadcast:
		m.input.Placeholder = "mission for every mysis"
	case inputMessage:
		m.input.Placeholder = "order for " + m.name(id)
	case inputFilter:
		m.input.Placeholder = "text in name, state, provider, action or error"
	}
	m.input.Width = max(m.width-4, 10)
	m.back, m.mode = m.mode, modeInput
	return m.input.Focus()
}

func (m *Model) onInputKey(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	switch k.Type {
	case tea.KeyEsc:
		m.mode = m.back
		return m, nil
	case tea.KeyEnter:
		text := strings.TrimSpace(m.input.Value())
		m.mode = m.back
		switch m.inputKind {
		case inputFilter:
			m.filter = text
			m.fixSelection()
			return m, nil
		case inputBroadcast:
			if text == "" {
				m.setFlash("nothing broadcast: the text was empty", true)
				return m, nil
			}
			return m, m.act(present.Subject{Service: "bus"}, func(ctx context.Context) (string, error) {
				n, err := m.b.Broadcast(ctx, text)
				return fmt.Sprintf("broadcast delivered to %d myses", n), err
			})
		case inputMessage:
			id, name := m.inputFor, m.name(m.inputFor)
			if text == "" {
				m.setFlash("nothing sent: the message was empty", true)
				return m, nil
			}
			return m, m.act(present.Subject{Mysis: name, Service: "bus"}, func(ctx context.Context) (string, error) {
				return "sent to " + name, m.b.Send(ctx, id, text)
			})
		}
		return m, nil
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	if m.inputKind == inputFilter { // filter as you type
		m.filter = m.input.Value()
		m.fixSelection()
	}
	return m, cmd
}

// openForm opens the create form (id "") or the configure form of mysis id, prefilled with its configuration.
func (m *Model) openForm(id string) tea.Cmd {
	m.formFor, m.formFocus = id, 0
	if id == "" {
		m.formLabels = []string{"name", "provider", "model"}
		m.formWas = []string{"", "", ""}
	} else {
		mm := m.rows[id].GetMysis()
		m.formLabels = []string{"provider", "model", "temperature"}
		m.formWas = []string{mm.GetProvider(), mm.GetModel(), strconv.FormatFloat(mm.GetTemperature(), 'g', -1, 64)}
	}
	m.form = make([]textinput.Model, len(m.formLabels))
	for i := range m.form {
		in := textinput.New()
		in.Prompt = ""
		in.CharLimit = 200
		in.Width = 40
		in.SetValue(m.formWas[i])
		if id == "" {
			in.Placeholder = []string{"e.g. scout-1", "the runner's default", "the provider's default"}[i]
		}
		m.form[i] = in
	}
	m.back, m.mode = m.mode, modeForm
	return m.form[0].Focus()
}

func (m *Model) onFormKey(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	switch k.Type {
	case tea.KeyEsc:
		m.mode = m.back
		return m, nil
	case tea.KeyTab, tea.KeyDown, tea.KeyShiftTab, tea.KeyUp:
		m.form[m.formFocus].Blur()
		d := 1
		if k.Type == tea.KeyShiftTab || k.Type == tea.KeyUp {
			d = len(m.form) - 1
		}
		m.formFocus = (m.formFocus + d) % len(m.form)
		return m, m.form[m.formFocus].Focus()
	case tea.KeyEnter:
		vals := make([]string, len(m.form))
		for i, in := range m.form {
			vals[i] = strings.TrimSpace(in.Value())
		}
		m.mode = m.back
		if m.formFor == "" {
			name, provider, model := vals[0], vals[1], vals[2]
			if name == "" {
				m.setFlash("nothing created: a mysis needs a name", true)
				return m, nil
			}
			return m, m.act(present.Subject{Mysis: name, Create: true, Service: "runner"}, func(ctx context.Context) (string, error) {
				st, err := m.b.Create(ctx, &runnerv1.CreateMysisRequest{Name: name, Provider: provider, Model: model, Start: true})
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("created %s (%s/%s), running", name, st.GetMysis().GetProvider(), st.GetMysis().GetModel()), nil
			})
		}
		id, name := m.formFor, m.name(m.formFor)
		req := &runnerv1.ConfigureMysisRequest{Mysis: id}
		if vals[0] != m.formWas[0] {
			req.Provider = &vals[0]
		}
		if vals[1] != m.formWas[1] {
			req.Model = &vals[1]
		}
		if vals[2] != m.formWas[2] {
			t, err := strconv.ParseFloat(vals[2], 64)
			if err != nil {
				m.setFlash(fmt.Sprintf("not configured: temperature %q is not a number", vals[2]), true)
				return m, nil
			}
			req.Temperature = &t
		}
		if req.Provider == nil && req.Model == nil && req.Temperature == nil {
			m.setFlash("nothing changed", false)
			return m, nil
		}
		return m, m.act(present.Subject{Mysis: name, Service: "runner"}, func(ctx context.Context) (string, error) {
			st, err := m.b.Configure(ctx, req)
			if err != nil {
				return "", err
			}
			mm := st.GetMysis()
			return fmt.Sprintf("configured %s: %s/%s, temperature %g", name, mm.GetProvider(), mm.GetModel(), mm.GetTemperature()), nil
		})
	}
	var cmd tea.Cmd
	m.form[m.formFocus], cmd = m.form[m.formFocus].Update(k)
	return m, cmd
}

// layoutViewport sizes the scrolling body of the focus and preview views and fills it.
func (m *Model) layoutViewport() {
	m.viewport.Width = max(m.width, 20)
	m.viewport.Height = max(m.height-4, 3) // title, header line, status, help
	switch m.mode {
	case modeFocus:
		m.viewport.SetContent(m.focusBody())
	case modePreview:
		m.viewport.SetContent(m.previewBody())
	}
}
