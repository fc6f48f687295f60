package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/present"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
)

var (
	titleStyle    = lipgloss.NewStyle().Bold(true)
	headStyle     = lipgloss.NewStyle().Bold(true).Underline(true)
	selectedStyle = lipgloss.NewStyle().Reverse(true)
	dimStyle      = lipgloss.NewStyle().Faint(true)
	errStyle      = lipgloss.NewStyle().Foreground(lipgloss.Color("9"))
	okStyle       = lipgloss.NewStyle().Foreground(lipgloss.Color("10"))
	stateStyles   = map[memoryv1.MysisState]lipgloss.Style{
		memoryv1.MysisState_MYSIS_STATE_RUNNING: lipgloss.NewStyle().Foreground(lipgloss.Color("10")),
		memoryv1.MysisState_MYSIS_STATE_IDLE:    lipgloss.NewStyle().Foreground(lipgloss.Color("11")),
		memoryv1.MysisState_MYSIS_STATE_STOPPED: lipgloss.NewStyle().Faint(true),
		memoryv1.MysisState_MYSIS_STATE_ERRORED: lipgloss.NewStyle().Foreground(lipgloss.Color("9")).Bold(true),
	}
)

// View implements tea.Model. Every line is cut to the terminal's width and the screen never exceeds its height,
// so a resize redraws cleanly.
func (m *Model) View() string {
	var body []string
	switch m.mode {
	case modeFocus:
		body = append(body, m.focusHeader(), m.viewport.View())
	case modePreview:
		body = append(body, m.previewHeader(), m.viewport.View())
	case modeHelp:
		body = m.helpView()
	default:
		body = m.swarmView()
		if m.back == modeFocus && (m.mode == modeInput || m.mode == modeForm || m.mode == modeConfirm) {
			body = []string{m.focusHeader(), m.viewport.View()}
		}
	}
	lines := strings.Split(strings.Join(body, "\n"), "\n")
	bottom := m.bottom()
	room := max(m.height-len(bottom)-1, 1)
	if len(lines) > room {
		lines = lines[:room]
	}
	for len(lines) < room {
		lines = append(lines, "")
	}
	out := append([]string{m.title()}, lines...)
	out = append(out, bottom...)
	for i, l := range out {
		out[i] = ansi.Truncate(l, m.width, "…")
	}
	return strings.Join(out, "\n")
}

func (m *Model) title() string {
	counts := map[memoryv1.MysisState]int{}
	for _, st := range m.rows {
		counts[st.GetMysis().GetState()]++
	}
	var parts []string
	for _, s := range []memoryv1.MysisState{memoryv1.MysisState_MYSIS_STATE_RUNNING, memoryv1.MysisState_MYSIS_STATE_IDLE,
		memoryv1.MysisState_MYSIS_STATE_STOPPED, memoryv1.MysisState_MYSIS_STATE_ERRORED} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], present.State(s)))
		}
	}
	t := fmt.Sprintf("%s — %d myses", m.opts.Title, len(m.rows))
	if len(parts) > 0 {
		t += ": " + strings.Join(parts, ", ")
	}
	switch {
	case m.live:
		t += " · events live"
	default:
		t += " · events lost, reconnecting"
	}
	t += " · sorted by " + sortNames[m.sortBy]
	if m.filter != "" {
		t += fmt.Sprintf(" · filter %q", m.filter)
	}
	return titleStyle.Render(t)
}

// column of the swarm table; flexible ones share the width left by the fixed ones.
type column struct {
	title string
	width int
	flex  bool
	right bool
	cell  func(*runnerv1.MysisStatus) string
}

func (m *Model) columns() []column {
	cols := []column{
		{title: "NAME", width: 14, cell: func(s *runnerv1.MysisStatus) string { return s.GetMysis().GetName() }},
		{title: "STATE", width: 8, cell: func(s *runnerv1.MysisStatus) string { return present.State(s.GetMysis().GetState()) }},
		{title: "PROVIDER/MODEL", width: 20, cell: func(s *runnerv1.MysisStatus) string {
			return s.GetMysis().GetProvider() + "/" + s.GetMysis().GetModel()
		}},
		{title: "TURNS", width: 5, right: true, cell: func(s *runnerv1.MysisStatus) string { return fmt.Sprint(s.GetMysis().GetCurrentTurn()) }},
		{title: "CREDITS", width: 8, right: true, cell: present.Credits},
		// Tokens compact (1.1M), so a long-running mysis's count is never cut short; the focus view has it exact.
		{title: "TOKENS", width: 7, right: true, cell: func(s *runnerv1.MysisStatus) string { t, _ := present.UsageCompact(s); return t }},
		{title: "COST", width: 9, right: true, cell: func(s *runnerv1.MysisStatus) string { _, c := present.Usage(s); return c }},
		{title: "LAST ACTION", width: 12, flex: true, cell: func(s *runnerv1.MysisStatus) string { return present.OneLine(s.GetLastAction()) }},
		{title: "LAST ERROR", width: 12, flex: true, cell: func(s *runnerv1.MysisStatus) string { return present.OneLine(s.GetLastError()) }},
	}
	for _, st := range m.rows {
		cols[0].width = max(cols[0].width, min(lipgloss.Width(st.GetMysis().GetName()), 24))
	}
	// Narrow terminals lose the least useful columns first, then the flexible ones shrink.
	fixed := func() int {
		w := 2
		for _, c := range cols {
			w += c.width + 1
		}
		return w
	}
	for _, drop := range []string{"COST", "TOKENS", "PROVIDER/MODEL", "CREDITS", "LAST ERROR"} {
		if fixed() <= m.width {
			break
		}
		for i, c := range cols {
			if c.title == drop {
				cols = append(cols[:i], cols[i+1:]...)
				break
			}
		}
	}
	if extra := m.width - fixed(); extra > 0 {
		var flex []int
		for i, c := range cols {
			if c.flex {
				flex = append(flex, i)
			}
		}
		for j, i := range flex {
			share := extra / len(flex)
			if j == len(flex)-1 {
				share = extra - share*(len(flex)-1)
			}
			cols[i].width += share
		}
	}
	return cols
}

func pad(s string, w int, right bool) string {
	s = ansi.Truncate(s, w, "…")
	gap := w - lipgloss.Width(s)
	if gap <= 0 {
		return s
	}
	if right {
		return strings.Repeat(" ", gap) + s
	}
	return s + strings.Repeat(" ", gap)
}

func (m *Model) swarmView() []string {
	if !m.loaded {
		return []string{"", "loading the swarm…"}
	}
	cols := m.columns()
	var head []string
	for _, c := range cols {
		head = append(head, pad(c.title, c.width, c.right))
	}
	lines := []string{headStyle.Render("  " + strings.Join(head, " "))}
	vis := m.visible()
	if len(vis) == 0 {
		if len(m.rows) == 0 {
			return append(lines, "", "  No myses yet: press n to create one.")
		}
		return append(lines, "", "  No mysis matches the filter: press / to change it, esc to clear it.")
	}
	// Keep the selected row on screen when the list is longer than the terminal.
	room := max(m.height-5, 1)
	start := 0
	for i, st := range vis {
		if st.GetMysis().GetId() == m.selected && i >= room {
			start = i - room + 1
		}
	}
	for _, st := range vis[start:min(len(vis), start+room)] {
		var cells []string
		for _, c := range cols {
			cell := pad(present.Safe(c.cell(st)), c.width, c.right)
			if c.title == "STATE" {
				if style, ok := stateStyles[st.GetMysis().GetState()]; ok {
					cell = style.Render(cell)
				}
			}
			if c.title == "LAST ERROR" && st.GetLastError() != "" {
				cell = errStyle.Render(cell)
			}
			cells = append(cells, cell)
		}
		line := strings.Join(cells, " ")
		if st.GetMysis().GetId() == m.selected {
			line = selectedStyle.Render("> " + line)
		} else {
			line = "  " + line
		}
		lines = append(lines, line)
	}
	return lines
}

func (m *Model) focusHeader() string {
	st := m.rows[m.focus]
	mm := st.GetMysis()
	tokens, cost := present.Usage(st)
	state := present.State(mm.GetState())
	if r := mm.GetStateReason(); r != "" {
		state += " (" + r + ")"
	}
	return titleStyle.Render(present.Safe(fmt.Sprintf("%s · %s · %s/%s · turn %d · credits %s · tokens %s · cost %s",
		mm.GetName(), state, mm.GetProvider(), mm.GetModel(), mm.GetCurrentTurn(), present.Credits(st), tokens, cost)))
}

// focusBody is the scrolling part of the focus view: last action, the full last error, live events, history.
func (m *Model) focusBody() string {
	st := m.rows[m.focus]
	w := max(m.width, 20)
	var b []string
	action := st.GetLastAction()
	if at := st.GetLastActionAt(); at != nil && action != "" {
		action += " at " + at.AsTime().Local().Format("15:04:05")
	}
	b = append(b, "last action: "+present.Safe(or(action, "none yet")))
	if e := st.GetLastError(); e != "" {
		b = append(b, errStyle.Render("last error:"))
		for _, l := range strings.Split(lipgloss.NewStyle().Width(w-2).Render(present.Safe(e)), "\n") {
			b = append(b, "  "+l)
		}
	} else {
		b = append(b, "last error: none")
	}
	b = append(b, "", headStyle.Render("events"))
	evs := m.events[m.focus]
	if len(evs) == 0 {
		b = append(b, dimStyle.Render("  none since the console started"))
	}
	for i := len(evs) - 1; i >= 0 && i >= len(evs)-12; i-- {
		b = append(b, fmt.Sprintf("  %s  %s", evs[i].at.Local().Format("15:04:05"), present.Safe(evs[i].text)))
	}
	b = append(b, "", headStyle.Render("recent history"))
	if m.histErr != "" {
		b = append(b, errStyle.Render("  "+m.histErr))
	}
	for i := len(m.history) - 1; i >= 0; i-- {
		mem := m.history[i]
		line := "  " + present.RowHeader(mem)
		if c := present.OneLine(mem.GetContent()); c != "" {
			line += ": " + c
		}
		for _, tc := range mem.GetToolCalls() {
			line += present.Safe(fmt.Sprintf(" → %s(%s)", tc.GetName(), tc.GetArgumentsJson()))
		}
		b = append(b, line)
	}
	return strings.Join(b, "\n")
}

func (m *Model) previewHeader() string {
	name := m.name(m.prevFor)
	if m.preview == nil {
		return titleStyle.Render("context preview of " + name)
	}
	t := m.preview.Tokens
	return titleStyle.Render(fmt.Sprintf("context preview of %s · %d messages · %d of %d tokens · %d dropped",
		name, len(m.preview.Messages), t.GetTotal(), m.preview.Budget, len(m.preview.Dropped)))
}

func (m *Model) previewBody() string {
	switch {
	case m.prevErr != "":
		return errStyle.Render(m.prevErr)
	case m.preview == nil:
		return "composing…"
	}
	lines := present.PreviewText(*m.preview, 240)
	for i, l := range lines {
		if strings.Contains(l, "tool call in progress") {
			lines[i] = okStyle.Render(l)
		}
	}
	return strings.Join(lines, "\n")
}

func (m *Model) helpView() []string {
	k := m.keys
	rows := []key.Binding{k.Up, k.Down, k.Focus, k.New, k.Broadcast, k.Message, k.Relaunch, k.Stop, k.Delete, k.Configure,
		k.Preview, k.Filter, k.Sort, k.Back, k.Help, k.Quit}
	out := []string{"", headStyle.Render("keys") + dimStyle.Render(" — any key closes this help")}
	for _, r := range rows {
		out = append(out, fmt.Sprintf("  %-6s %s", r.Help().Key, r.Help().Desc))
	}
	return append(out, "",
		"  The table follows the bus's event stream; a mysis's turns and credits are re-read when it acts.",
		"  In the focus and preview views the keys act on that mysis; esc or q goes back; arrows scroll.",
		"  Tokens and cost show — until the runner reports usage.")
}

// bottom is the input line or prompt (when one is open), the status line and the key help.
func (m *Model) bottom() []string {
	var out []string
	switch m.mode {
	case modeInput:
		label := map[inputKind]string{inputBroadcast: "Broadcast to every mysis", inputMessage: "Message to " + m.name(m.inputFor),
			inputFilter: "Filter"}[m.inputKind]
		out = append(out, label+" (enter sends, esc cancels):", m.input.View())
	case modeForm:
		title := "Create a mysis (it starts right away)"
		if m.formFor != "" {
			title = "Configure " + m.name(m.formFor)
		}
		out = append(out, title+" — tab moves, enter saves, esc cancels:")
		for i, in := range m.form {
			mark := "  "
			if i == m.formFocus {
				mark = "> "
			}
			out = append(out, fmt.Sprintf("%s%-12s %s", mark, m.formLabels[i]+":", in.View()))
		}
	case modeConfirm:
		st := m.rows[m.confirmFor]
		out = append(out, errStyle.Render(fmt.Sprintf("Delete %s with all its %d memories? This cannot be undone. y deletes, any other key keeps it.",
			m.name(m.confirmFor), st.GetMysis().GetLastSeq())))
	}
	status := m.flash
	switch {
	case status == "" && m.watchErr != "":
		status = errStyle.Render("event stream lost (" + m.watchErr + "); reconnecting")
	case m.flashErr:
		status = errStyle.Render(status)
	}
	out = append(out, status)
	var help []string
	switch m.mode {
	case modeFocus, modePreview:
		k := m.keys
		for _, b := range []key.Binding{k.Message, k.Relaunch, k.Stop, k.Delete, k.Configure, k.Preview, k.Back, k.Help} {
			help = append(help, b.Help().Key+" "+b.Help().Desc)
		}
		help = append(help, "↑↓ scroll")
	default:
		for _, b := range m.keys.short() {
			help = append(help, b.Help().Key+" "+b.Help().Desc)
		}
	}
	return append(out, dimStyle.Render(strings.Join(help, " · ")))
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
