package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
)

// commanded is the scripted swarm that also takes the lifecycle calls bulk actions make, with the admin API's
// answers: AlreadyExists for a taken name, NotFound for an unknown mysis.
type commanded struct {
	*scripted
	created []*runnerv1.CreateMysisRequest
}

func (c *commanded) find(ref string) *runnerv1.MysisStatus {
	for _, st := range c.myses {
		if st.GetMysis().GetName() == ref || st.GetMysis().GetId() == ref {
			return st
		}
	}
	return nil
}

func (c *commanded) Create(_ context.Context, req *runnerv1.CreateMysisRequest) (*runnerv1.MysisStatus, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.find(req.GetName()) != nil {
		return nil, status.Error(codes.AlreadyExists, `duplicate key value violates unique constraint "myses_name_key" (SQLSTATE 23505)`)
	}
	c.created = append(c.created, req)
	state := memoryv1.MysisState_MYSIS_STATE_IDLE
	if req.GetStart() {
		state = memoryv1.MysisState_MYSIS_STATE_RUNNING
	}
	st := &runnerv1.MysisStatus{Mysis: &memoryv1.Mysis{Id: "id-" + req.GetName(), Name: req.GetName(), State: state,
		Provider: req.GetProvider(), Model: req.GetModel(), Temperature: req.GetTemperature()}, Credits: -1}
	c.myses = append(c.myses, st)
	return st, nil
}

func (c *commanded) lifecycle(verb, ref string, state memoryv1.MysisState) error {
	c.record(verb + " " + ref)
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.find(ref)
	if st == nil {
		return status.Errorf(codes.NotFound, "mysis %q not found", ref)
	}
	st.Mysis.State = state
	return nil
}

func (c *commanded) Start(_ context.Context, ref string) error {
	return c.lifecycle("start", ref, memoryv1.MysisState_MYSIS_STATE_RUNNING)
}

func (c *commanded) Stop(_ context.Context, ref string) error {
	return c.lifecycle("stop", ref, memoryv1.MysisState_MYSIS_STATE_STOPPED)
}

func (c *commanded) Send(_ context.Context, ref, text string) error {
	return c.lifecycle("send "+text+" to", ref, c.stateOf(ref))
}

func (c *commanded) stateOf(ref string) memoryv1.MysisState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.find(ref).GetMysis().GetState()
}

func (c *commanded) Configure(_ context.Context, req *runnerv1.ConfigureMysisRequest) (*runnerv1.MysisStatus, error) {
	c.record(fmt.Sprintf("configure %s %s/%s %g", req.GetMysis(), req.GetProvider(), req.GetModel(), req.GetTemperature()))
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.find(req.GetMysis())
	if st == nil {
		return nil, status.Errorf(codes.NotFound, "mysis %q not found", req.GetMysis())
	}
	if req.Model != nil {
		st.Mysis.Model = req.GetModel()
	}
	return st, nil
}

func (c *commanded) states() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	for _, st := range c.myses {
		out[st.GetMysis().GetName()] = strings.TrimPrefix(st.GetMysis().GetState().String(), "MYSIS_STATE_")
	}
	return out
}

func TestCreateMakesNMysesFromAPatternWithTheCLIsOptions(t *testing.T) {
	b := &commanded{scripted: newScripted()}
	c := startConsole(t, b)
	c.login(testToken)
	c.get("/")
	form := url.Values{"csrf": {c.csrf}, "name": {"miner-{n}"}, "count": {"3"}, "provider": {"autopilot"}, "model": {"m1"},
		"temperature": {"0.2"}, "endpoint": {"v2"}, "system_prompt": {"Mine."}, "idle": {"1"}}
	if resp, _ := c.post("/create", form); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	// miner-2 exists: the numbers go round it.
	if _, body := c.get("/"); !strings.Contains(body, "created 3 myses, idle: miner-1 … miner-4") {
		t.Fatalf("the swarm page does not say what was created:\n%s", flashOf(body))
	}
	// Again: the taken numbers are skipped, a pattern without {n} is numbered too.
	form.Set("name", "miner")
	form.Set("count", "2")
	c.post("/create", form)
	if _, body := c.get("/"); !strings.Contains(body, "created 2 myses, idle: miner-5 … miner-6") {
		t.Fatalf("a second batch does not continue the numbering:\n%s", flashOf(body))
	}
	if len(b.created) != 5 {
		t.Fatalf("created %d myses, want 5", len(b.created))
	}
	for _, req := range b.created {
		if req.GetProvider() != "autopilot" || req.GetModel() != "m1" || req.GetTemperature() != 0.2 || req.GetSpacemoltEndpoint() != "v2" ||
			req.GetSystemPrompt() != "Mine." || req.GetStart() {
			t.Errorf("create request %+v does not carry the form's options", req)
		}
	}
	for _, tc := range []struct{ count, want string }{{"0", `the count must be a whole number from 1 to 500, not &#34;0&#34;`},
		{"many", `not &#34;many&#34;`}, {"501", `not &#34;501&#34;`}} {
		form.Set("count", tc.count)
		c.post("/create", form)
		if _, body := c.get("/"); !strings.Contains(body, tc.want) {
			t.Errorf("count %q: the page does not say %s:\n%s", tc.count, tc.want, flashOf(body))
		}
	}
	form.Set("count", "1")
	form.Set("temperature", "hot")
	c.post("/create", form)
	if _, body := c.get("/"); !strings.Contains(body, `--temperature: &#34;hot&#34; is not a number`) {
		t.Errorf("a bad temperature is not refused in the CLI's words:\n%s", flashOf(body))
	}
	if len(b.created) != 5 {
		t.Fatalf("refused forms created myses: %d", len(b.created))
	}
	// One mysis by its plain name, started (the form's default).
	c.post("/create", url.Values{"csrf": {c.csrf}, "name": {"scout-9"}})
	if _, body := c.get("/"); !strings.Contains(body, "created scout-9 (/), running") || !b.created[5].GetStart() {
		t.Errorf("a single create:\n%s", flashOf(body))
	}
}

func TestBulkActionsApplyToTheSelectionAndNameWhatFailed(t *testing.T) {
	b := &commanded{scripted: newScripted()}
	c := startConsole(t, b)
	c.login(testToken)
	if _, body := c.get("/"); !strings.Contains(body, `<input type="checkbox" name="mysis" value="scout-1" form="bulk"`) {
		t.Fatal("the swarm rows have no selection boxes")
	}
	sel := url.Values{"csrf": {c.csrf}, "mysis": {"scout-1", "miner-2"}, "action": {"stop"}, "back": {"/?sort=credits#picked=scout-1,miner-2"}}
	resp, _ := c.post("/bulk", sel)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/?sort=credits#picked=scout-1,miner-2" {
		t.Fatalf("bulk stop: %d to %q, want back to the page as it was", resp.StatusCode, resp.Header.Get("Location"))
	}
	if st := b.states(); st["scout-1"] != "STOPPED" || st["miner-2"] != "STOPPED" || st["trader-3"] != "ERRORED" {
		t.Fatalf("after a bulk stop of two: %v", st)
	}
	if _, body := c.get("/"); !strings.Contains(body, "stopped 2 myses") {
		t.Errorf("the page does not count what was stopped:\n%s", flashOf(body))
	}
	// One unknown name: the others still start, and the sentence names the one that did not.
	sel.Set("action", "start")
	sel["mysis"] = []string{"scout-1", "ghost", "miner-2"}
	c.post("/bulk", sel)
	if _, body := c.get("/"); !strings.Contains(body, "started 2 of 3 myses; not ghost: no mysis named ghost") {
		t.Errorf("a partly failed start:\n%s", flashOf(body))
	}
	if st := b.states(); st["scout-1"] != "RUNNING" || st["miner-2"] != "RUNNING" {
		t.Fatalf("after the start: %v", st)
	}
	sel["mysis"] = []string{"scout-1", "trader-3"}
	sel.Set("action", "message")
	sel.Set("text", "  ")
	c.post("/bulk", sel)
	if _, body := c.get("/"); !strings.Contains(body, "nothing sent: the message was empty") {
		t.Errorf("an empty bulk message:\n%s", flashOf(body))
	}
	sel.Set("text", "regroup at sol_central")
	c.post("/bulk", sel)
	sel.Set("action", "configure")
	sel.Set("model", "m2")
	c.post("/bulk", sel)
	calls := b.called()
	for _, want := range []string{"send regroup at sol_central to scout-1", "send regroup at sol_central to trader-3", "configure scout-1 /m2 0", "configure trader-3 /m2 0"} {
		if !slices.Contains(calls, want) {
			t.Errorf("calls %v lack %q", calls, want)
		}
	}
	before := len(b.called())
	for _, tc := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"csrf": {c.csrf}, "action": {"stop"}}, "nothing done: select myses first"},
		{url.Values{"csrf": {c.csrf}, "mysis": {"scout-1"}, "action": {"explode"}}, "nothing done: choose start, stop, message or configure"},
		{url.Values{"csrf": {c.csrf}, "mysis": {"scout-1"}, "action": {"configure"}}, "nothing changed: give a provider, a model or a temperature"},
		{url.Values{"csrf": {c.csrf}, "mysis": {"scout-1"}, "action": {"configure"}, "temperature": {"warm"}}, "is not a number"},
	} {
		c.post("/bulk", tc.form)
		if _, body := c.get("/"); !strings.Contains(body, tc.want) {
			t.Errorf("%v: the page does not say %q:\n%s", tc.form, tc.want, flashOf(body))
		}
	}
	if after := len(b.called()); after != before {
		t.Fatalf("refused bulk forms reached the swarm: %v", b.called()[before:])
	}
}

// flashOf is the flash message of a page, for failure messages.
func flashOf(body string) string {
	i := strings.Index(body, `class="flash`)
	if i < 0 {
		return "(no flash)"
	}
	end := strings.Index(body[i:], "</")
	if end < 0 {
		end = len(body) - i
	}
	return body[i : i+end]
}
