package tui

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	busv1 "github.com/zoeaswarm/zoea/gen/go/zoea/bus/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
)

func TestMain(m *testing.M) {
	// Golden screens are plain text: no colours, whatever terminal runs the tests.
	lipgloss.SetColorProfile(termenv.Ascii)
	os.Exit(m.Run())
}

func invalidModel() error {
	desc := `autopilot is Zoea's offline policy and runs no model, so model "foo" would be ignored`
	st, _ := status.New(codes.InvalidArgument, "model: "+desc).WithDetails(&errdetails.BadRequest{
		FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "model", Description: desc}}})
	return st.Err()
}

type console struct {
	t  *testing.T
	tm *teatest.TestModel
	b  *scripted
}

func start(t *testing.T, w, h int) *console { return startWith(t, w, h, Options{}) }

// startWith starts the console on the scripted swarm with opts (the clock and call timeout are the test's).
func startWith(t *testing.T, w, h int, opts Options) *console {
	t.Helper()
	b := newScripted()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	opts.Now, opts.CallTimeout = func() time.Time { return t0 }, 5*time.Second
	m := New(ctx, b, opts)
	c := &console{t: t, tm: teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h)), b: b}
	c.waitFor("trader-3")
	return c
}

// waitFor waits until the screen shows text (the console renders on its own schedule).
func (c *console) waitFor(text string) {
	c.t.Helper()
	teatest.WaitFor(c.t, c.tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(text)) },
		teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
}

func (c *console) key(k string) {
	switch k {
	case "enter":
		c.tm.Send(tea.KeyMsg{Type: tea.KeyEnter})
	case "esc":
		c.tm.Send(tea.KeyMsg{Type: tea.KeyEsc})
	case "tab":
		c.tm.Send(tea.KeyMsg{Type: tea.KeyTab})
	case "down":
		c.tm.Send(tea.KeyMsg{Type: tea.KeyDown})
	default:
		c.tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)})
	}
}

// screen quits and returns the last screen.
func (c *console) screen() string {
	c.t.Helper()
	if err := c.tm.Quit(); err != nil {
		c.t.Fatal(err)
	}
	return c.tm.FinalModel(c.t, teatest.WithFinalTimeout(10*time.Second)).(*Model).View()
}

func (c *console) golden() string {
	c.t.Helper()
	s := c.screen()
	golden.RequireEqual(c.t, []byte(s))
	return s
}

func TestSwarmView(t *testing.T) {
	c := start(t, 140, 12)
	s := c.golden()
	for _, want := range []string{"3 myses: 1 running, 1 idle, 1 errored", "scout-1", "1250", "ollama: HTTP 500", "TOKENS", "COST", " 1.1M ", " $0.001235 "} {
		if !strings.Contains(s, want) {
			t.Errorf("screen lacks %q", want)
		}
	}
}

func TestResizeKeepsEveryLineInside(t *testing.T) {
	c := start(t, 140, 12)
	c.tm.Send(tea.WindowSizeMsg{Width: 60, Height: 9})
	c.waitFor("errored") // redrawn
	s := c.golden()
	lines := strings.Split(s, "\n")
	if len(lines) != 9 {
		t.Errorf("%d lines on a 9-line terminal", len(lines))
	}
	for _, l := range lines {
		if w := lipgloss.Width(l); w > 60 {
			t.Errorf("line of width %d on a 60-column terminal: %q", w, l)
		}
	}
}

// Events, not polling, move the table: a tool call shows as the last action, a state change as the state, an
// error as the last error.
func TestEventsUpdateTheTable(t *testing.T) {
	c := start(t, 140, 12)
	at := timestamppb.New(t0.Add(time.Minute))
	c.b.emit(&busv1.Event{MysisId: "id-miner-2", At: at, Kind: busv1.EventKind_EVENT_KIND_STATE_CHANGED,
		Payload: &busv1.Event_StateChanged{StateChanged: &busv1.StateChanged{From: memoryv1.MysisState_MYSIS_STATE_IDLE, To: memoryv1.MysisState_MYSIS_STATE_RUNNING, Reason: "woken by a broadcast"}}})
	c.b.emit(&busv1.Event{MysisId: "id-miner-2", At: at, Kind: busv1.EventKind_EVENT_KIND_TOOL_CALLED,
		Payload: &busv1.Event_ToolCalled{ToolCalled: &busv1.ToolCalled{Tool: "travel", DurationMs: 40, Excerpt: "arrived at main_belt"}}})
	c.b.emit(&busv1.Event{MysisId: "id-scout-1", At: at, Kind: busv1.EventKind_EVENT_KIND_ERROR,
		Payload: &busv1.Event_Error{Error: &busv1.ErrorOccurred{Message: "mcp: session expired; logged in again"}}})
	c.waitFor("session expired")
	s := c.golden()
	if !strings.Contains(s, "events live") || !strings.Contains(s, "2 running") {
		t.Errorf("events did not reach the table:\n%s", s)
	}
}

func TestCreateWithN(t *testing.T) {
	c := start(t, 140, 14)
	c.key("n")
	c.waitFor("Create a mysis")
	c.key("scout-9")
	c.key("tab")
	c.key("autopilot")
	c.key("enter")
	c.waitFor("created scout-9")
	c.golden()
	if got := c.b.Calls(); !slices.Contains(got, "create scout-9 autopilot ") {
		t.Errorf("calls %q", got)
	}
}

func TestCreateDuplicateSaysSo(t *testing.T) {
	c := start(t, 140, 12)
	c.key("n")
	c.key("scout-1")
	c.key("enter")
	c.waitFor("already exists")
	if s := c.screen(); !strings.Contains(s, "a mysis named scout-1 already exists") || strings.Contains(s, "SQLSTATE") {
		t.Errorf("duplicate not explained:\n%s", s)
	}
}

func TestBroadcastWithB(t *testing.T) {
	c := start(t, 140, 12)
	c.key("b")
	c.waitFor("Broadcast to every mysis")
	c.key("Regroup at sol_central")
	c.key("enter")
	c.waitFor("broadcast delivered to 3 myses")
	c.golden()
	if got := c.b.Calls(); !slices.Equal(got, []string{"broadcast Regroup at sol_central"}) {
		t.Errorf("calls %q", got)
	}
}

func TestMessageStopRelaunch(t *testing.T) {
	c := start(t, 140, 12)
	c.key("down") // miner-2 (sorted by name: miner-2, scout-1, trader-3 → second row is scout-1)
	c.key("m")
	c.waitFor("Message to")
	c.key("dock now")
	c.key("enter")
	c.waitFor("sent to")
	c.key("s")
	c.waitFor("stopped ")
	c.key("r")
	c.waitFor("started ")
	c.screen()
	want := []string{"send id-scout-1 dock now", "stop id-scout-1", "start id-scout-1"}
	if got := c.b.Calls(); !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
}

func TestDeleteAsksFirst(t *testing.T) {
	c := start(t, 140, 12)
	c.key("d")
	c.waitFor("This cannot be undone")
	c.key("x")
	c.waitFor("is kept")
	if len(c.b.Calls()) != 0 {
		t.Fatalf("deleted without a yes: %q", c.b.Calls())
	}
	c.key("d")
	c.waitFor("This cannot be undone")
	c.key("y")
	c.waitFor("deleted miner-2")
	s := c.golden()
	if strings.Contains(s, "miner-2 ") && !strings.Contains(s, "deleted miner-2") {
		t.Errorf("miner-2 still listed:\n%s", s)
	}
	if got := c.b.Calls(); !slices.Equal(got, []string{"delete id-miner-2"}) {
		t.Errorf("calls %q", got)
	}
}

func TestConfigureFormSendsOnlyChanges(t *testing.T) {
	c := start(t, 140, 14)
	c.key("c")
	c.waitFor("Configure miner-2")
	c.key("tab")
	c.tm.Send(tea.KeyMsg{Type: tea.KeyCtrlU}) // clear the model field
	c.key("foo")
	c.key("enter")
	c.waitFor("--model")
	s := c.golden()
	if !strings.Contains(s, `--model: autopilot is Zoea's offline policy and runs no model`) {
		t.Errorf("refusal not shown:\n%s", s)
	}
	if got := c.b.Calls(); !slices.Equal(got, []string{"configure id-miner-2 model=foo"}) {
		t.Errorf("calls %q", got)
	}
}

func TestFilter(t *testing.T) {
	c := start(t, 140, 12)
	c.key("/")
	c.key("errored")
	c.key("enter")
	c.waitFor(`filter "errored"`)
	s := c.screen()
	if strings.Contains(s, "scout-1") || !strings.Contains(s, "trader-3") {
		t.Errorf("filter not applied:\n%s", s)
	}
}

func TestFocusView(t *testing.T) {
	c := start(t, 120, 24)
	c.key("down")
	c.key("enter")
	c.waitFor("recent history")
	c.b.emit(&busv1.Event{MysisId: "id-scout-1", At: timestamppb.New(t0.Add(time.Minute)), Kind: busv1.EventKind_EVENT_KIND_TOOL_CALLED,
		Payload: &busv1.Event_ToolCalled{ToolCalled: &busv1.ToolCalled{Tool: "mine", DurationMs: 12, Excerpt: `{"mined":"copper_ore","qty":3}`}}})
	c.waitFor("tool mine (12 ms)")
	c.golden()
}

func TestFocusShowsTheFullLastError(t *testing.T) {
	c := start(t, 80, 20)
	c.key("/")
	c.key("trader")
	c.key("enter")
	c.key("enter")
	c.waitFor("last error:")
	s := c.screen()
	if !strings.Contains(strings.Join(strings.Fields(s), " "), "check ollama server logs for details") {
		t.Errorf("the error is cut in the focus view:\n%s", s)
	}
}

// The preview gives every message its reasons and tokens, lists dropped entries, and shows a missing result at the
// end of a running mysis's request as a tool call in progress, not as a repair.
func TestPreviewExplainsEveryMessage(t *testing.T) {
	c := start(t, 120, 30)
	c.key("down") // scout-1, running
	c.key("p")
	c.waitFor("context preview of scout-1")
	s := c.golden()
	for _, want := range []string{"[1] user — 14 tokens — memory #38", "why: mission", "stubbed: snapshot superseded",
		"tool call in progress", "dropped (1):", "#31 seq 31 — earlier turn compressed"} {
		if !strings.Contains(s, want) {
			t.Errorf("preview lacks %q", want)
		}
	}
	if strings.Contains(s, "repair:") {
		t.Errorf("an in-progress call is shown as a repair:\n%s", s)
	}
}

func TestHelp(t *testing.T) {
	c := start(t, 100, 26)
	c.key("?")
	c.waitFor("any key closes this help")
	c.golden()
}

// A notice from outside (zoea dev started a service again) shows in the status line as it comes, and each one
// replaces the one before.
func TestNoticesShowInTheStatusLine(t *testing.T) {
	notices := make(chan string, 2)
	c := startWith(t, 140, 12, Options{Notices: notices})
	notices <- "composer: exited unexpectedly (signal: killed); started again as pid 4242"
	c.waitFor("started again as pid 4242")
	notices <- "runner: exited unexpectedly (exit status 2); started again as pid 4343"
	c.waitFor("pid 4343")
	if s := c.screen(); strings.Contains(s, "pid 4242") || !strings.Contains(s, "runner: exited unexpectedly") {
		t.Fatalf("status line:\n%s", s)
	}
}
