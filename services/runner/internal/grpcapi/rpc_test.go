package grpcapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/testsupport/memfake"
	"github.com/zoeaswarm/zoea/services/runner/internal/admin"
	"github.com/zoeaswarm/zoea/services/runner/internal/composerclient"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/mysis"
	"github.com/zoeaswarm/zoea/services/runner/internal/usage"
)

// One test per SwarmService RPC over real gRPC (harness_test.go): what memory stores, what the response says, the
// errors a commander can cause, and the wakes sent to the owning replica.

var modelDefaults = Defaults{Rules: admin.Rules{Provider: "autopilot", Providers: []string{"autopilot", "ollama", "openai"},
	Models: map[string]string{"autopilot": "autopilot", "ollama": "qwen3:8b"}}}

// setState sets a stored mysis's state (and encouragement count) directly in the fake.
func setState(t *testing.T, f *memfake.Fake, id string, st memoryv1.MysisState, enc int32) {
	t.Helper()
	if _, err := f.SetMysisState(context.Background(), &memoryv1.SetMysisStateRequest{MysisId: id, State: st, Reason: "test", EncouragementCount: &enc}); err != nil {
		t.Fatal(err)
	}
}

// mysisCount is how many myses the fake stores.
func mysisCount(t *testing.T, f *memfake.Fake) int {
	t.Helper()
	resp, err := f.ListMyses(context.Background(), &memoryv1.ListMysesRequest{PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.GetMyses())
}

func sameMysis(t *testing.T, what string, got, want *memoryv1.Mysis) {
	t.Helper()
	if !proto.Equal(got, want) {
		t.Errorf("%s: response mysis %v, stored %v", what, got, want)
	}
}

func TestCreateMysisRPC(t *testing.T) {
	s := startSwarm(t, modelDefaults, nil)
	ctx := context.Background()

	// Defaults fill what the request leaves empty; it is created idle and nothing is woken.
	resp, err := s.api.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: "scout"})
	if err != nil {
		t.Fatal(err)
	}
	m := storedMysis(t, s.mem, "scout")
	sameMysis(t, "defaults", resp.GetStatus().GetMysis(), m)
	if m.GetProvider() != "autopilot" || m.GetModel() != "autopilot" || m.GetTemperature() != 0.7 ||
		m.GetSystemPrompt() != admin.DefaultSystemPrompt || m.GetState() != idle {
		t.Errorf("stored with defaults: %v", m)
	}
	if st := resp.GetStatus(); st.GetCredits() != -1 || st.GetOwner() != "" {
		t.Errorf("a new mysis has no live status: credits %d, owner %q", st.GetCredits(), st.GetOwner())
	}
	checkWakes(t, "create", s.wakes)

	// The provider's default model; temperature 0 is a choice, not "unset"; a blank prompt takes the default;
	// start sets it running with a fresh encouragement count and wakes its owner.
	resp, err = s.api.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: "miner", Provider: "ollama", Temperature: new(0.0),
		SystemPrompt: " \n\t", Start: true})
	if err != nil {
		t.Fatal(err)
	}
	m = storedMysis(t, s.mem, "miner")
	sameMysis(t, "start", resp.GetStatus().GetMysis(), m)
	if m.GetProvider() != "ollama" || m.GetModel() != "qwen3:8b" || m.GetTemperature() != 0 || m.GetSystemPrompt() != admin.DefaultSystemPrompt ||
		m.GetState() != running || m.GetStateReason() != "started by commander" || m.GetEncouragementCount() != 0 {
		t.Errorf("stored with start: %v", m)
	}
	checkWakes(t, "create and start", s.wakes, wake{m.GetId(), mysis.WakeStart})

	// What is sent is stored as sent.
	if _, err = s.api.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: "trader", Provider: "openai", Model: "gpt-5-mini",
		Temperature: new(1.2), SystemPrompt: "Trade only."}); err != nil {
		t.Fatal(err)
	}
	if m = storedMysis(t, s.mem, "trader"); m.GetProvider() != "openai" || m.GetModel() != "gpt-5-mini" || m.GetTemperature() != 1.2 ||
		m.GetSystemPrompt() != "Trade only." || m.GetState() != idle {
		t.Errorf("stored as sent: %v", m)
	}

	for _, tc := range []struct {
		name  string
		req   *runnerv1.CreateMysisRequest
		code  codes.Code
		field string
	}{
		{"taken name", &runnerv1.CreateMysisRequest{Name: "scout", Start: true}, codes.AlreadyExists, ""},
		{"provider without a default model", &runnerv1.CreateMysisRequest{Name: "gpt", Provider: "openai"}, codes.InvalidArgument, "model"},
		{"unknown provider", &runnerv1.CreateMysisRequest{Name: "x", Provider: "gpt9"}, codes.InvalidArgument, "provider"},
		{"negative temperature", &runnerv1.CreateMysisRequest{Name: "x", Temperature: new(-0.1)}, codes.InvalidArgument, "temperature"},
		{"NUL in name", &runnerv1.CreateMysisRequest{Name: "a\x00b"}, codes.InvalidArgument, "name"},
	} {
		_, err := s.api.CreateMysis(ctx, tc.req)
		checkStatus(t, tc.name, err, tc.code, tc.field)
	}
	if n := mysisCount(t, s.mem); n != 3 {
		t.Errorf("%d myses stored after the refused creates, want 3", n)
	}
	if m := storedMysis(t, s.mem, "scout"); m.GetState() != idle {
		t.Errorf("a create with a taken name changed the existing mysis: %v", m)
	}
	checkWakes(t, "refused creates", s.wakes)
}

func TestListMysesRPC(t *testing.T) {
	live := newLive()
	s := startSwarm(t, Defaults{}, live)
	ctx := context.Background()
	a := addMysis(t, s.mem, "alpha", "autopilot", "autopilot")
	b := addMysis(t, s.mem, "bravo", "autopilot", "autopilot")
	addMysis(t, s.mem, "charlie", "autopilot", "autopilot")
	setState(t, s.mem, b.GetId(), running, 0)
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	live.set(a.GetId(), "runner-a", &mysis.Status{LastAction: "mine", LastActionAt: at, Credits: 1200, Turns: 3, LastError: "fuel low"})
	s.spend.setUsage(func(r *memoryv1.GetUsageRequest) (*memoryv1.GetUsageResponse, error) {
		resp := &memoryv1.GetUsageResponse{Total: &memoryv1.UsageTotals{}}
		for _, id := range r.GetMysisIds() {
			if id == a.GetId() {
				resp.Rows = append(resp.Rows, &memoryv1.UsageRow{MysisId: id, Totals: &memoryv1.UsageTotals{Calls: 4, CostNanos: 5000}})
			}
		}
		return resp, nil
	})

	page, err := s.api.ListMyses(ctx, &runnerv1.ListMysesRequest{PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := nameList(page.GetMyses()); got != "alpha,bravo" || page.GetNextPageToken() == "" {
		t.Fatalf("first page: %s, next %q", got, page.GetNextPageToken())
	}
	alpha, bravo := page.GetMyses()[0], page.GetMyses()[1]
	if alpha.GetOwner() != "runner-a" || alpha.GetLastAction() != "mine" || !alpha.GetLastActionAt().AsTime().Equal(at) ||
		alpha.GetCredits() != 1200 || alpha.GetTurns() != 3 || alpha.GetLastError() != "fuel low" {
		t.Errorf("alpha's live status: %v", alpha)
	}
	if alpha.GetUsage().GetCalls() != 4 || alpha.GetUsage().GetCostNanos() != 5000 {
		t.Errorf("alpha's usage: %v", alpha.GetUsage())
	}
	if bravo.GetOwner() != "" || bravo.GetCredits() != -1 || bravo.GetLastActionAt() != nil || bravo.GetUsage() == nil ||
		bravo.GetUsage().GetCalls() != 0 || bravo.GetMysis().GetState() != running {
		t.Errorf("bravo (no live status, no usage): %v", bravo)
	}
	want := &memoryv1.GetUsageRequest{MysisIds: []string{a.GetId(), b.GetId()}, GroupBy: memoryv1.UsageGroup_USAGE_GROUP_MYSIS, PageSize: 2}
	if got := s.spend.lastRequest("GetUsage"); !proto.Equal(got, want) {
		t.Errorf("usage asked %v, want one call for the page: %v", got, want)
	}

	page, err = s.api.ListMyses(ctx, &runnerv1.ListMysesRequest{PageSize: 2, PageToken: page.GetNextPageToken()})
	if err != nil {
		t.Fatal(err)
	}
	if got := nameList(page.GetMyses()); got != "charlie" || page.GetNextPageToken() != "" {
		t.Errorf("second page: %s, next %q", got, page.GetNextPageToken())
	}

	// A state filter; page size 0 asks memory for the default 100.
	page, err = s.api.ListMyses(ctx, &runnerv1.ListMysesRequest{State: running})
	if err != nil {
		t.Fatal(err)
	}
	if got := nameList(page.GetMyses()); got != "bravo" {
		t.Errorf("running: %s", got)
	}
	if r, _ := s.spend.lastRequest("ListMyses").(*memoryv1.ListMysesRequest); r.GetPageSize() != 100 || r.GetState() != running {
		t.Errorf("memory asked %v, want page size 100 and state running", r)
	}
	// An empty page asks no usage.
	usageCalls := s.spend.callsOf("GetUsage")
	if page, err = s.api.ListMyses(ctx, &runnerv1.ListMysesRequest{State: stopped}); err != nil || len(page.GetMyses()) != 0 {
		t.Errorf("stopped: %v, %v", page, err)
	}
	if n := s.spend.callsOf("GetUsage"); n != usageCalls {
		t.Errorf("an empty page asked usage %d times", n-usageCalls)
	}

	lists := s.spend.callsOf("ListMyses")
	for _, size := range []int32{-1, 1001} {
		_, err := s.api.ListMyses(ctx, &runnerv1.ListMysesRequest{PageSize: size})
		checkStatus(t, "page size", err, codes.InvalidArgument, "page_size")
	}
	if n := s.spend.callsOf("ListMyses"); n != lists {
		t.Errorf("a refused page size reached memory")
	}
	// Memory's refusal is relayed with its field; a usage failure fails the list.
	_, err = s.api.ListMyses(ctx, &runnerv1.ListMysesRequest{PageToken: "not-a-token"})
	checkStatus(t, "bad page token", err, codes.InvalidArgument, "page_token")
	s.spend.setUsage(func(*memoryv1.GetUsageRequest) (*memoryv1.GetUsageResponse, error) {
		return nil, errs.Unavailablef(nil, "usage is down")
	})
	_, err = s.api.ListMyses(ctx, &runnerv1.ListMysesRequest{})
	checkStatus(t, "usage down", err, codes.Unavailable, "")
	checkWakes(t, "list", s.wakes)
}

func nameList(sts []*runnerv1.MysisStatus) string {
	var out []string
	for _, st := range sts {
		out = append(out, st.GetMysis().GetName())
	}
	return strings.Join(out, ",")
}

func TestGetMysisRPC(t *testing.T) {
	live := newLive()
	s := startSwarm(t, Defaults{SpendLimits: []usage.Limit{{Window: usage.Hour, Unit: usage.Tokens, Amount: 100000}, {Window: usage.Day, Unit: usage.Cost, Amount: 2e9}}}, live)
	ctx := context.Background()
	m := addMysis(t, s.mem, "scout", "autopilot", "autopilot")
	addMysis(t, s.mem, "other", "autopilot", "autopilot")
	live.set(m.GetId(), "runner-b", &mysis.Status{Credits: 50, Turns: 1})
	s.spend.setOwn(m.GetId(), spendLimit(day, cost, 5e9))
	s.spend.setUsage(func(r *memoryv1.GetUsageRequest) (*memoryv1.GetUsageResponse, error) {
		return &memoryv1.GetUsageResponse{Rows: []*memoryv1.UsageRow{{MysisId: r.GetMysisIds()[0], Totals: &memoryv1.UsageTotals{Calls: 7}}}}, nil
	})
	// Its own day limit replaces the configured one; the configured hour limit applies.
	wantLimits := []*memoryv1.SpendLimit{spendLimit(hour, tokens, 100000), spendLimit(day, cost, 5e9)}
	for _, ref := range []string{"scout", m.GetId(), strings.ToUpper(m.GetId())} {
		resp, err := s.api.GetMysis(ctx, &runnerv1.GetMysisRequest{Mysis: ref})
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		st := resp.GetStatus()
		sameMysis(t, ref, st.GetMysis(), m)
		if st.GetOwner() != "runner-b" || st.GetCredits() != 50 || st.GetTurns() != 1 || st.GetUsage().GetCalls() != 7 {
			t.Errorf("%s: status %v", ref, st)
		}
		if !equalLimits(st.GetSpendLimits(), wantLimits) {
			t.Errorf("%s: spend limits %v, want %v", ref, st.GetSpendLimits(), wantLimits)
		}
		if r, _ := s.spend.lastRequest("GetSpend").(*memoryv1.GetSpendRequest); r.GetMysisId() != m.GetId() {
			t.Errorf("%s: spend asked for %q", ref, r.GetMysisId())
		}
	}
	for _, tc := range []struct {
		ref   string
		code  codes.Code
		field string
	}{
		{"", codes.InvalidArgument, "mysis"},
		{"a\x00b", codes.InvalidArgument, "mysis"},
		{"nobody", codes.NotFound, ""},
		{unknownID, codes.NotFound, ""},
	} {
		_, err := s.api.GetMysis(ctx, &runnerv1.GetMysisRequest{Mysis: tc.ref})
		checkStatus(t, "get "+tc.ref, err, tc.code, tc.field)
	}
	checkWakes(t, "get", s.wakes)
}

func equalLimits(a, b []*memoryv1.SpendLimit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !proto.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func TestStartMysisRPC(t *testing.T) {
	live := newLive()
	s := startSwarm(t, Defaults{}, live)
	ctx := context.Background()
	m := addMysis(t, s.mem, "scout", "autopilot", "autopilot")
	setState(t, s.mem, m.GetId(), stopped, 5)
	live.set(m.GetId(), "runner-c", nil)

	resp, err := s.api.StartMysis(ctx, &runnerv1.StartMysisRequest{Mysis: "scout"})
	if err != nil {
		t.Fatal(err)
	}
	stored := storedMysis(t, s.mem, "scout")
	sameMysis(t, "start", resp.GetStatus().GetMysis(), stored)
	if stored.GetState() != running || stored.GetStateReason() != "started by commander" || stored.GetEncouragementCount() != 0 {
		t.Errorf("after start: %v", stored)
	}
	if resp.GetStatus().GetOwner() != "runner-c" {
		t.Errorf("owner %q", resp.GetStatus().GetOwner())
	}
	checkWakes(t, "start", s.wakes, wake{m.GetId(), mysis.WakeStart})

	// A lost wake does not fail the start: the owner's next scan finds the stored state.
	setState(t, s.mem, m.GetId(), stopped, 2)
	s.wakes.failWith(errs.Unavailablef(nil, "bus down"))
	if _, err := s.api.StartMysis(ctx, &runnerv1.StartMysisRequest{Mysis: m.GetId()}); err != nil {
		t.Fatalf("start with the bus down: %v", err)
	}
	if st := storedMysis(t, s.mem, "scout"); st.GetState() != running || st.GetEncouragementCount() != 0 {
		t.Errorf("after a start with the bus down: %v", st)
	}
	checkWakes(t, "start with the bus down", s.wakes, wake{m.GetId(), mysis.WakeStart})
	s.wakes.failWith(nil)

	// Errors: nothing is written, nobody is woken.
	setState(t, s.mem, m.GetId(), stopped, 2)
	_, err = s.api.StartMysis(ctx, &runnerv1.StartMysisRequest{Mysis: "nobody"})
	checkStatus(t, "unknown", err, codes.NotFound, "")
	_, err = s.api.StartMysis(ctx, &runnerv1.StartMysisRequest{})
	checkStatus(t, "empty", err, codes.InvalidArgument, "mysis")
	s.mem.FailNext("SetMysisState", memfake.Fault{Code: codes.Unavailable})
	_, err = s.api.StartMysis(ctx, &runnerv1.StartMysisRequest{Mysis: "scout"})
	checkStatus(t, "memory down", err, codes.Unavailable, "")
	if st := storedMysis(t, s.mem, "scout"); st.GetState() != stopped {
		t.Errorf("after the refused starts: %v", st)
	}
	checkWakes(t, "refused starts", s.wakes)
}

func TestStopMysisRPC(t *testing.T) {
	s := startSwarm(t, Defaults{}, nil)
	ctx := context.Background()
	m := addMysis(t, s.mem, "scout", "autopilot", "autopilot")
	setState(t, s.mem, m.GetId(), running, 3)

	// The reason is stored trimmed; the encouragement count is left alone.
	resp, err := s.api.StopMysis(ctx, &runnerv1.StopMysisRequest{Mysis: "scout", Reason: "  docking for repairs \n"})
	if err != nil {
		t.Fatal(err)
	}
	stored := storedMysis(t, s.mem, "scout")
	sameMysis(t, "stop", resp.GetStatus().GetMysis(), stored)
	if stored.GetState() != stopped || stored.GetStateReason() != "docking for repairs" || stored.GetEncouragementCount() != 3 {
		t.Errorf("after stop: %v", stored)
	}
	checkWakes(t, "stop", s.wakes, wake{m.GetId(), mysis.WakeStop})

	setState(t, s.mem, m.GetId(), running, 3)
	if _, err := s.api.StopMysis(ctx, &runnerv1.StopMysisRequest{Mysis: m.GetId(), Reason: " "}); err != nil {
		t.Fatal(err)
	}
	if st := storedMysis(t, s.mem, "scout"); st.GetState() != stopped || st.GetStateReason() != "stopped by commander" {
		t.Errorf("after a stop without a reason: %v", st)
	}
	checkWakes(t, "stop by id", s.wakes, wake{m.GetId(), mysis.WakeStop})

	setState(t, s.mem, m.GetId(), running, 3)
	_, err = s.api.StopMysis(ctx, &runnerv1.StopMysisRequest{Mysis: unknownID})
	checkStatus(t, "unknown", err, codes.NotFound, "")
	_, err = s.api.StopMysis(ctx, &runnerv1.StopMysisRequest{Reason: "why"})
	checkStatus(t, "empty", err, codes.InvalidArgument, "mysis")
	s.mem.FailNext("SetMysisState", memfake.Fault{Code: codes.Unavailable})
	_, err = s.api.StopMysis(ctx, &runnerv1.StopMysisRequest{Mysis: "scout"})
	checkStatus(t, "memory down", err, codes.Unavailable, "")
	if st := storedMysis(t, s.mem, "scout"); st.GetState() != running {
		t.Errorf("after the refused stops: %v", st)
	}
	checkWakes(t, "refused stops", s.wakes)
}

func TestConfigureMysisRPC(t *testing.T) {
	s := startSwarm(t, modelDefaults, nil)
	ctx := context.Background()
	m := addMysis(t, s.mem, "scout", "autopilot", "autopilot")
	type config struct {
		provider, model string
		temperature     float64
		prompt          string
	}
	stored := func() config {
		m := storedMysis(t, s.mem, "scout")
		return config{m.GetProvider(), m.GetModel(), m.GetTemperature(), m.GetSystemPrompt()}
	}
	for _, step := range []struct {
		name string
		req  *runnerv1.ConfigureMysisRequest
		want config
	}{
		{"switch provider: its default model", &runnerv1.ConfigureMysisRequest{Mysis: "scout", Provider: new("ollama")},
			config{"ollama", "qwen3:8b", 0, "You play SpaceMolt."}},
		{"model", &runnerv1.ConfigureMysisRequest{Mysis: "scout", Model: new("llama3.1")},
			config{"ollama", "llama3.1", 0, "You play SpaceMolt."}},
		{"same provider keeps the model", &runnerv1.ConfigureMysisRequest{Mysis: "scout", Provider: new("ollama")},
			config{"ollama", "llama3.1", 0, "You play SpaceMolt."}},
		{"temperature and prompt", &runnerv1.ConfigureMysisRequest{Mysis: "scout", Temperature: new(1.5), SystemPrompt: new("Mine only.")},
			config{"ollama", "llama3.1", 1.5, "Mine only."}},
		{"provider and model by id", &runnerv1.ConfigureMysisRequest{Mysis: m.GetId(), Provider: new("openai"), Model: new("gpt-5-mini")},
			config{"openai", "gpt-5-mini", 1.5, "Mine only."}},
	} {
		resp, err := s.api.ConfigureMysis(ctx, step.req)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := stored(); got != step.want {
			t.Errorf("%s: stored %+v, want %+v", step.name, got, step.want)
		}
		sameMysis(t, step.name, resp.GetStatus().GetMysis(), storedMysis(t, s.mem, "scout"))
		checkWakes(t, step.name, s.wakes, wake{m.GetId(), mysis.WakeConfigure})
	}

	before, updates := stored(), s.mem.Calls("UpdateMysisConfig")
	for _, tc := range []struct {
		name  string
		req   *runnerv1.ConfigureMysisRequest
		code  codes.Code
		field string
	}{
		{"blank model", &runnerv1.ConfigureMysisRequest{Mysis: "scout", Model: new("  ")}, codes.InvalidArgument, "model"},
		{"temperature", &runnerv1.ConfigureMysisRequest{Mysis: "scout", Temperature: new(2.5)}, codes.InvalidArgument, "temperature"},
		{"blank prompt", &runnerv1.ConfigureMysisRequest{Mysis: "scout", SystemPrompt: new(" \n")}, codes.InvalidArgument, "system_prompt"},
		{"unknown provider", &runnerv1.ConfigureMysisRequest{Mysis: "scout", Provider: new("gpt9")}, codes.InvalidArgument, "provider"},
		{"unknown mysis", &runnerv1.ConfigureMysisRequest{Mysis: "nobody", Temperature: new(1.0)}, codes.NotFound, ""},
		{"no mysis", &runnerv1.ConfigureMysisRequest{Temperature: new(1.0)}, codes.InvalidArgument, "mysis"},
	} {
		_, err := s.api.ConfigureMysis(ctx, tc.req)
		checkStatus(t, tc.name, err, tc.code, tc.field)
	}
	if n := s.mem.Calls("UpdateMysisConfig"); n != updates {
		t.Errorf("refused configures reached memory %d times", n-updates)
	}
	s.mem.FailNext("UpdateMysisConfig", memfake.Fault{Code: codes.Unavailable})
	_, err := s.api.ConfigureMysis(ctx, &runnerv1.ConfigureMysisRequest{Mysis: "scout", Temperature: new(1.0)})
	checkStatus(t, "memory down", err, codes.Unavailable, "")
	if got := stored(); got != before {
		t.Errorf("after the refused configures: %+v, want %+v", got, before)
	}
	checkWakes(t, "refused configures", s.wakes)
}

func TestDeleteMysisRPC(t *testing.T) {
	s := startSwarm(t, Defaults{}, nil)
	ctx := context.Background()
	a := addMysis(t, s.mem, "scout", "autopilot", "autopilot")
	addMysis(t, s.mem, "miner", "autopilot", "autopilot")

	if _, err := s.api.DeleteMysis(ctx, &runnerv1.DeleteMysisRequest{Mysis: "scout"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.mem.GetMysis(ctx, &memoryv1.GetMysisRequest{MysisId: a.GetId()}); !errs.Is(err, errs.NotFound) {
		t.Errorf("scout after delete: %v, want NotFound", err)
	}
	if n := mysisCount(t, s.mem); n != 1 {
		t.Errorf("%d myses left, want miner only", n)
	}
	checkWakes(t, "delete", s.wakes, wake{a.GetId(), mysis.WakeDelete})

	_, err := s.api.DeleteMysis(ctx, &runnerv1.DeleteMysisRequest{Mysis: a.GetId()})
	checkStatus(t, "delete again", err, codes.NotFound, "")
	_, err = s.api.DeleteMysis(ctx, &runnerv1.DeleteMysisRequest{})
	checkStatus(t, "empty", err, codes.InvalidArgument, "mysis")
	s.mem.FailNext("DeleteMysis", memfake.Fault{Code: codes.Unavailable})
	_, err = s.api.DeleteMysis(ctx, &runnerv1.DeleteMysisRequest{Mysis: "miner"})
	checkStatus(t, "memory down", err, codes.Unavailable, "")
	storedMysis(t, s.mem, "miner") // still there
	checkWakes(t, "refused deletes", s.wakes)
}

func TestPreviewContextRPC(t *testing.T) {
	s := startSwarm(t, Defaults{}, nil)
	ctx := context.Background()
	answer := &composerv1.ComposeContextResponse{
		Messages: []*composerv1.ChatMessage{
			{Role: memoryv1.Role_ROLE_SYSTEM, Content: "You play SpaceMolt."},
			{Role: memoryv1.Role_ROLE_USER, Content: "Keep going."},
		},
		Manifest:      &composerv1.Manifest{TokenBudget: 4096, NudgeLevel: 1},
		Encouragement: &composerv1.Encouragement{Action: composerv1.EncouragementAction_ENCOURAGEMENT_ACTION_INCREMENT, NextCount: 2, Nudge: "Keep going."},
	}
	s.composer.answer(answer, nil)
	policy := &composerv1.Policy{TokenBudget: new(int32(4096))}

	user := &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_USER, Source: memoryv1.Source_SOURCE_DIRECT, Content: "Mine the belt."}
	reply := &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM, Content: "Done."}
	calls := &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_ASSISTANT, Source: memoryv1.Source_SOURCE_LLM,
		ToolCalls: []*memoryv1.ToolCall{{Id: "c1", Name: "mine", ArgumentsJson: "{}"}}}
	result := &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_TOOL, Source: memoryv1.Source_SOURCE_TOOL, ToolCallId: "c1", ToolName: "mine", Content: "ok"}
	note := &memoryv1.NewMemory{Role: memoryv1.Role_ROLE_SYSTEM, Source: memoryv1.Source_SOURCE_SYSTEM, Content: "The server restarted."}
	// The next turn is autonomous (the mysis carries on by itself) unless a prompt or tool work is waiting.
	for i, tc := range []struct {
		name       string
		memories   []*memoryv1.NewMemory
		autonomous bool
	}{
		{"no memories", nil, true},
		{"the last reply made no tool calls", []*memoryv1.NewMemory{user, reply}, true},
		{"a system note last", []*memoryv1.NewMemory{user, reply, note}, true},
		{"a prompt waiting", []*memoryv1.NewMemory{user}, false},
		{"tool calls waiting for results", []*memoryv1.NewMemory{user, calls}, false},
		{"a tool result last", []*memoryv1.NewMemory{user, calls, result}, false},
	} {
		name := "preview-" + string(rune('a'+i))
		m := addMysis(t, s.mem, name, "autopilot", "autopilot")
		if len(tc.memories) > 0 {
			if _, err := s.mem.AppendMemories(ctx, &memoryv1.AppendMemoriesRequest{MysisId: m.GetId(), Memories: tc.memories}); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		before := storedMysis(t, s.mem, name)
		resp, err := s.api.PreviewContext(ctx, &runnerv1.PreviewContextRequest{Mysis: name, Policy: policy})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		reqs := s.composer.requests()
		want := &composerv1.ComposeContextRequest{MysisId: m.GetId(), Policy: policy, BeginAutonomousTurn: tc.autonomous}
		if len(reqs) != i+1 || !proto.Equal(reqs[i], want) {
			t.Errorf("%s: composer asked %v, want %v once more", tc.name, reqs, want)
		}
		if !proto.Equal(resp, &runnerv1.PreviewContextResponse{Messages: answer.GetMessages(), Manifest: answer.GetManifest(), Encouragement: answer.GetEncouragement()}) {
			t.Errorf("%s: response %v, composer answered %v", tc.name, resp, answer)
		}
		// A preview has no side effects.
		if got := len(s.mem.Memories(m.GetId())); got != len(tc.memories) {
			t.Errorf("%s: %d memories after the preview, want %d", tc.name, got, len(tc.memories))
		}
		sameMysis(t, tc.name+": no state change", storedMysis(t, s.mem, name), before)
	}
	checkWakes(t, "previews", s.wakes)

	asked := len(s.composer.requests())
	_, err := s.api.PreviewContext(ctx, &runnerv1.PreviewContextRequest{Mysis: "nobody"})
	checkStatus(t, "unknown", err, codes.NotFound, "")
	_, err = s.api.PreviewContext(ctx, &runnerv1.PreviewContextRequest{})
	checkStatus(t, "empty", err, codes.InvalidArgument, "mysis")
	s.mem.FailNext("ListRecentMemories", memfake.Fault{Code: codes.Unavailable})
	_, err = s.api.PreviewContext(ctx, &runnerv1.PreviewContextRequest{Mysis: "preview-a"})
	checkStatus(t, "memory down", err, codes.Unavailable, "")
	if n := len(s.composer.requests()); n != asked {
		t.Errorf("the composer was asked %d times for refused previews", n-asked)
	}
	// The composer's refusal reaches the commander with its code.
	for _, code := range []codes.Code{codes.FailedPrecondition, codes.Unavailable} {
		s.composer.answer(nil, status.Error(code, "composer says no"))
		_, err = s.api.PreviewContext(ctx, &runnerv1.PreviewContextRequest{Mysis: "preview-a"})
		checkStatus(t, "composer "+code.String(), err, code, "")
	}
}

// A preview budgets for the tool definitions the mysis's real requests carry (Defaults.Tools); without the tool
// list (the game server down) it is refused as Unavailable instead of showing a request that would not be sent.
func TestPreviewContextSendsTheTools(t *testing.T) {
	tools := []llm.Tool{
		{Name: "get_status", Description: "Your ship.", Parameters: json.RawMessage(`{"type":"object"}`), ReadOnly: true},
		{Name: "zoea_search_messages", Description: "Search your memories.", Parameters: json.RawMessage(`{"type":"object","required":["query"]}`)},
	}
	var gameDown atomic.Bool
	var asked atomic.Value // the endpoint the last tool list was asked for
	s := startSwarm(t, Defaults{Tools: func(_ context.Context, endpoint string) ([]llm.Tool, error) {
		asked.Store(endpoint)
		if gameDown.Load() {
			return nil, errors.New("mcp connect http://127.0.0.1:7100/mcp: connection refused")
		}
		return tools, nil
	}}, nil)
	ctx := context.Background()
	s.composer.answer(&composerv1.ComposeContextResponse{Manifest: &composerv1.Manifest{TokenBudget: 8192}}, nil)
	addMysis(t, s.mem, "tooled", "autopilot", "autopilot")
	if _, err := s.api.PreviewContext(ctx, &runnerv1.PreviewContextRequest{Mysis: "tooled"}); err != nil {
		t.Fatal(err)
	}
	if got := asked.Load(); got != "" {
		t.Errorf("tools asked for endpoint %q, want the swarm's (\"\")", got)
	}
	reqs := s.composer.requests()
	want := composerclient.ToProtoTools(tools)
	if len(reqs) != 1 || len(reqs[0].GetTools()) != len(want) {
		t.Fatalf("composer asked %v, want the two tools", reqs)
	}
	for i, w := range want {
		if !proto.Equal(reqs[0].GetTools()[i], w) {
			t.Errorf("tool %d: %v, want %v", i, reqs[0].GetTools()[i], w)
		}
	}
	// A mysis that plays MCP v2 is previewed with v2's tool block.
	if _, err := s.api.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: "tooled-v2", Provider: "autopilot", SpacemoltEndpoint: "v2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.api.PreviewContext(ctx, &runnerv1.PreviewContextRequest{Mysis: "tooled-v2"}); err != nil {
		t.Fatal(err)
	}
	if got := asked.Load(); got != "v2" {
		t.Errorf("tools asked for endpoint %q, want v2", got)
	}
	gameDown.Store(true)
	_, err := s.api.PreviewContext(ctx, &runnerv1.PreviewContextRequest{Mysis: "tooled"})
	checkStatus(t, "game down", err, codes.Unavailable, "")
	if n := len(s.composer.requests()); n != 2 {
		t.Errorf("the composer was asked for a preview without the tools (%d requests)", n)
	}
}

// The SpaceMolt endpoint is chosen per mysis (issue 29): create and configure store v1, v2 or "" (the swarm's),
// a configure wakes the mysis to take it at its next turn, and anything else is refused naming the field, with
// nothing stored.
func TestSpaceMoltEndpointPerMysisRPC(t *testing.T) {
	s := startSwarm(t, Defaults{}, nil)
	ctx := context.Background()
	resp, err := s.api.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: "far", Provider: "autopilot", SpacemoltEndpoint: "v2"})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetStatus().GetMysis().GetSpacemoltEndpoint(); got != "v2" || storedMysis(t, s.mem, "far").GetSpacemoltEndpoint() != "v2" {
		t.Fatalf("created with endpoint %q (stored %q), want v2", got, storedMysis(t, s.mem, "far").GetSpacemoltEndpoint())
	}
	creates := s.mem.Calls("CreateMysis")
	for _, bad := range []string{"v3", "V2", "http://127.0.0.1:7100/mcp/v2", strings.Repeat("x", 10000)} {
		_, err := s.api.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: "bad", Provider: "autopilot", SpacemoltEndpoint: bad})
		checkStatus(t, "create on "+truncateForTest(bad), err, codes.InvalidArgument, "spacemolt_endpoint")
	}
	if n := s.mem.Calls("CreateMysis"); n != creates {
		t.Errorf("refused creates reached the memory service (%d calls)", n-creates)
	}
	m := storedMysis(t, s.mem, "far")
	for _, e := range []string{"v1", ""} {
		if _, err := s.api.ConfigureMysis(ctx, &runnerv1.ConfigureMysisRequest{Mysis: "far", SpacemoltEndpoint: new(e)}); err != nil {
			t.Fatalf("configure endpoint %q: %v", e, err)
		}
		if got := storedMysis(t, s.mem, "far").GetSpacemoltEndpoint(); got != e {
			t.Errorf("configured endpoint %q, stored %q", e, got)
		}
		checkWakes(t, "configure endpoint "+e, s.wakes, wake{m.GetId(), mysis.WakeConfigure})
	}
	updates := s.mem.Calls("UpdateMysisConfig")
	_, err = s.api.ConfigureMysis(ctx, &runnerv1.ConfigureMysisRequest{Mysis: "far", SpacemoltEndpoint: new("mcp/v2")})
	checkStatus(t, "configure an endpoint URL", err, codes.InvalidArgument, "spacemolt_endpoint")
	if n := s.mem.Calls("UpdateMysisConfig"); n != updates {
		t.Errorf("a refused configure reached the memory service")
	}
}

func truncateForTest(s string) string {
	if len(s) > 20 {
		return s[:20] + "…"
	}
	return s
}

func TestGetUsageRPC(t *testing.T) {
	s := startSwarm(t, Defaults{}, nil)
	ctx := context.Background()
	a := addMysis(t, s.mem, "alpha", "autopilot", "autopilot")
	b := addMysis(t, s.mem, "bravo", "autopilot", "autopilot")
	answer := &memoryv1.GetUsageResponse{
		Total:         &memoryv1.UsageTotals{Calls: 9, PromptTokens: 1000, CostNanos: 42},
		Rows:          []*memoryv1.UsageRow{{MysisId: a.GetId(), MysisName: "alpha", Totals: &memoryv1.UsageTotals{Calls: 9}}},
		NextPageToken: "next",
	}
	s.spend.setUsage(func(*memoryv1.GetUsageRequest) (*memoryv1.GetUsageResponse, error) { return answer, nil })
	from := timestamppb.New(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	to := timestamppb.New(time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC))

	// Names and ids are sent on as ids, in order, with the rest of the query as given.
	resp, err := s.api.GetUsage(ctx, &runnerv1.GetUsageRequest{Myses: []string{"bravo", strings.ToUpper(a.GetId())}, From: from, To: to,
		GroupBy: memoryv1.UsageGroup_USAGE_GROUP_MYSIS, PageSize: 10, PageToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	want := &memoryv1.GetUsageRequest{MysisIds: []string{b.GetId(), a.GetId()}, From: from, To: to,
		GroupBy: memoryv1.UsageGroup_USAGE_GROUP_MYSIS, PageSize: 10, PageToken: "tok"}
	if got := s.spend.lastRequest("GetUsage"); !proto.Equal(got, want) {
		t.Errorf("memory asked %v, want %v", got, want)
	}
	if !proto.Equal(resp, &runnerv1.GetUsageResponse{Total: answer.GetTotal(), Rows: answer.GetRows(), NextPageToken: "next"}) {
		t.Errorf("response %v, memory answered %v", resp, answer)
	}
	// The top myses by cost are asked as given.
	if _, err := s.api.GetUsage(ctx, &runnerv1.GetUsageRequest{From: from, GroupBy: memoryv1.UsageGroup_USAGE_GROUP_MYSIS, Top: 10}); err != nil {
		t.Fatal(err)
	}
	if got := s.spend.lastRequest("GetUsage"); !proto.Equal(got, &memoryv1.GetUsageRequest{From: from, GroupBy: memoryv1.UsageGroup_USAGE_GROUP_MYSIS, Top: 10}) {
		t.Errorf("top 10: memory asked %v", got)
	}
	// No myses is the whole swarm.
	if _, err := s.api.GetUsage(ctx, &runnerv1.GetUsageRequest{GroupBy: memoryv1.UsageGroup_USAGE_GROUP_MODEL}); err != nil {
		t.Fatal(err)
	}
	if got := s.spend.lastRequest("GetUsage"); !proto.Equal(got, &memoryv1.GetUsageRequest{GroupBy: memoryv1.UsageGroup_USAGE_GROUP_MODEL}) {
		t.Errorf("whole swarm: memory asked %v", got)
	}

	// A bad reference anywhere in the list fails the call before memory sums anything.
	sums, lookups := s.spend.callsOf("GetUsage"), s.mem.Calls("GetMysisByName")
	_, err = s.api.GetUsage(ctx, &runnerv1.GetUsageRequest{Myses: make([]string, 1001)})
	checkStatus(t, "too many", err, codes.InvalidArgument, "myses")
	if n := s.mem.Calls("GetMysisByName"); n != lookups {
		t.Errorf("an oversized list was looked up (%d lookups)", n-lookups)
	}
	_, err = s.api.GetUsage(ctx, &runnerv1.GetUsageRequest{Myses: []string{"alpha", "nobody"}})
	checkStatus(t, "unknown", err, codes.NotFound, "")
	_, err = s.api.GetUsage(ctx, &runnerv1.GetUsageRequest{Myses: []string{"alpha", ""}})
	checkStatus(t, "empty reference", err, codes.InvalidArgument, "myses[1]")
	if n := s.spend.callsOf("GetUsage"); n != sums {
		t.Errorf("refused queries reached memory's usage %d times", n-sums)
	}
	// Memory's refusal is relayed with its field.
	s.spend.setUsage(func(*memoryv1.GetUsageRequest) (*memoryv1.GetUsageResponse, error) {
		return nil, errs.InvalidField("page_token", "malformed")
	})
	_, err = s.api.GetUsage(ctx, &runnerv1.GetUsageRequest{PageToken: "junk"})
	checkStatus(t, "bad page token", err, codes.InvalidArgument, "page_token")
	checkWakes(t, "usage", s.wakes)
}

func TestSetSpendLimitsRPC(t *testing.T) {
	defaults := []usage.Limit{{Window: usage.Hour, Unit: usage.Tokens, Amount: 100000}, {Window: usage.Day, Unit: usage.Cost, Amount: 2e9}}
	s := startSwarm(t, Defaults{SpendLimits: defaults}, nil)
	ctx := context.Background()
	m := addMysis(t, s.mem, "scout", "autopilot", "autopilot")
	s.spend.setUsage(func(r *memoryv1.GetUsageRequest) (*memoryv1.GetUsageResponse, error) {
		return &memoryv1.GetUsageResponse{Rows: []*memoryv1.UsageRow{{MysisId: r.GetMysisIds()[0], Totals: &memoryv1.UsageTotals{Calls: 3}}}}, nil
	})

	// Its own day limit replaces the configured one and an amount of 0 lifts the configured hour limit; the owner
	// is woken to re-check at once.
	own := []*memoryv1.SpendLimit{spendLimit(day, cost, 5e9), spendLimit(hour, tokens, 0)}
	resp, err := s.api.SetSpendLimits(ctx, &runnerv1.SetSpendLimitsRequest{Mysis: "scout", Limits: own})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.spend.ownLimits(m.GetId()); !equalLimits(got, own) {
		t.Errorf("memory stored %v, want %v", got, own)
	}
	st := resp.GetStatus()
	if want := []*memoryv1.SpendLimit{spendLimit(day, cost, 5e9)}; !equalLimits(st.GetSpendLimits(), want) {
		t.Errorf("effective limits %v, want %v", st.GetSpendLimits(), want)
	}
	if st.GetMysis().GetName() != "scout" || st.GetUsage().GetCalls() != 3 {
		t.Errorf("status %v", st)
	}
	checkWakes(t, "set", s.wakes, wake{m.GetId(), mysis.WakeConfigure})

	// No limits of its own: the configured ones apply.
	resp, err = s.api.SetSpendLimits(ctx, &runnerv1.SetSpendLimitsRequest{Mysis: m.GetId()})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.spend.ownLimits(m.GetId()); len(got) != 0 {
		t.Errorf("memory stored %v, want none", got)
	}
	if want := []*memoryv1.SpendLimit{spendLimit(hour, tokens, 100000), spendLimit(day, cost, 2e9)}; !equalLimits(resp.GetStatus().GetSpendLimits(), want) {
		t.Errorf("effective limits %v, want the defaults %v", resp.GetStatus().GetSpendLimits(), want)
	}
	checkWakes(t, "clear", s.wakes, wake{m.GetId(), mysis.WakeConfigure})

	// Refusals write nothing and wake nobody.
	sets := s.spend.callsOf("SetSpendLimits")
	_, err = s.api.SetSpendLimits(ctx, &runnerv1.SetSpendLimitsRequest{Mysis: "nobody", Limits: own})
	checkStatus(t, "unknown", err, codes.NotFound, "")
	_, err = s.api.SetSpendLimits(ctx, &runnerv1.SetSpendLimitsRequest{Limits: own})
	checkStatus(t, "empty", err, codes.InvalidArgument, "mysis")
	if n := s.spend.callsOf("SetSpendLimits"); n != sets {
		t.Errorf("refused calls reached memory %d times", n-sets)
	}
	_, err = s.api.SetSpendLimits(ctx, &runnerv1.SetSpendLimitsRequest{Mysis: "scout", Limits: []*memoryv1.SpendLimit{spendLimit(day, cost, -1)}})
	checkStatus(t, "memory refuses", err, codes.InvalidArgument, "limits[0].amount")
	if got := s.spend.ownLimits(m.GetId()); len(got) != 0 {
		t.Errorf("after refusals memory holds %v", got)
	}
	checkWakes(t, "refused sets", s.wakes)

	// Unlike start and stop, a wake that cannot be sent fails the call (the limits are stored: a retry is safe).
	s.wakes.failWith(errs.Unavailablef(nil, "bus down"))
	_, err = s.api.SetSpendLimits(ctx, &runnerv1.SetSpendLimitsRequest{Mysis: "scout", Limits: own})
	checkStatus(t, "bus down", err, codes.Unavailable, "")
	if got := s.spend.ownLimits(m.GetId()); !equalLimits(got, own) {
		t.Errorf("with the bus down memory stored %v, want %v", got, own)
	}
	checkWakes(t, "bus down", s.wakes, wake{m.GetId(), mysis.WakeConfigure})
}

// A provider that cannot serve the model now (admin.Rules.Serves: unreachable, no key) is FailedPrecondition for create
// and configure; nothing is written and nobody is woken.
func TestProviderRefusalIsFailedPrecondition(t *testing.T) {
	d := modelDefaults
	d.Rules.Serves = func(_ context.Context, provider, _ string) error {
		if provider == "ollama" {
			return errs.Conflictf("provider ollama is not reachable")
		}
		return nil
	}
	s := startSwarm(t, d, nil)
	ctx := context.Background()
	addMysis(t, s.mem, "scout", "autopilot", "autopilot")
	_, err := s.api.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: "miner", Provider: "ollama", Start: true})
	checkStatus(t, "create", err, codes.FailedPrecondition, "")
	_, err = s.api.ConfigureMysis(ctx, &runnerv1.ConfigureMysisRequest{Mysis: "scout", Provider: new("ollama")})
	checkStatus(t, "configure", err, codes.FailedPrecondition, "")
	if n, m := mysisCount(t, s.mem), storedMysis(t, s.mem, "scout"); n != 1 || m.GetProvider() != "autopilot" || s.mem.Calls("UpdateMysisConfig") != 0 {
		t.Errorf("after the refusals: %d myses, scout %v, %d updates", n, m, s.mem.Calls("UpdateMysisConfig"))
	}
	checkWakes(t, "refusals", s.wakes)
}

// Oversized strings are refused up front with InvalidArgument naming the field, in a short message: a 10 MB
// provider or model name used to come back as "Unavailable: COMPRESSION_ERROR", the value echoed into the status
// message and again into its BadRequest detail, which overflowed the HTTP/2 trailer the status travels in. Nothing
// reaches memory.
func TestConfigureAndCreateRefuseOversizedFields(t *testing.T) {
	s := startSwarm(t, modelDefaults, nil)
	ctx := context.Background()
	addMysis(t, s.mem, "scout", "autopilot", "autopilot")
	huge := strings.Repeat("x", 10<<20)
	updates, creates := s.mem.Calls("UpdateMysisConfig"), s.mem.Calls("CreateMysis")
	for _, tc := range []struct {
		name  string
		call  func() error
		field string
	}{
		{"configure provider", func() error {
			_, err := s.api.ConfigureMysis(ctx, &runnerv1.ConfigureMysisRequest{Mysis: "scout", Provider: &huge})
			return err
		}, "provider"},
		{"configure model", func() error {
			_, err := s.api.ConfigureMysis(ctx, &runnerv1.ConfigureMysisRequest{Mysis: "scout", Provider: new("ollama"), Model: &huge})
			return err
		}, "model"},
		{"configure system prompt", func() error {
			_, err := s.api.ConfigureMysis(ctx, &runnerv1.ConfigureMysisRequest{Mysis: "scout", SystemPrompt: &huge})
			return err
		}, "system_prompt"},
		{"configure mysis", func() error {
			_, err := s.api.ConfigureMysis(ctx, &runnerv1.ConfigureMysisRequest{Mysis: huge, Temperature: new(1.0)})
			return err
		}, "mysis"},
		{"create provider", func() error {
			_, err := s.api.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: "big", Provider: huge})
			return err
		}, "provider"},
		{"create model", func() error {
			_, err := s.api.CreateMysis(ctx, &runnerv1.CreateMysisRequest{Name: "big", Provider: "ollama", Model: huge})
			return err
		}, "model"},
	} {
		err := tc.call()
		checkStatus(t, tc.name, err, codes.InvalidArgument, tc.field)
		if st, _ := status.FromError(err); len(st.Message()) > 1<<10 || strings.Count(st.Message(), "xxxxxxxx") > 1 {
			t.Errorf("%s: a %d-byte message echoing the value: %.200q", tc.name, len(st.Message()), st.Message())
		}
	}
	if n := s.mem.Calls("UpdateMysisConfig") - updates; n != 0 {
		t.Errorf("oversized configures reached memory %d times", n)
	}
	if n := s.mem.Calls("CreateMysis") - creates; n != 0 {
		t.Errorf("oversized creates reached memory %d times", n)
	}
}

// A mysis whose lease holder stopped renewing it (a runner killed) says until when its play is paused; one whose
// holder is live, or that has no holder, does not.
func TestListMysesSaysWhenPlayIsPausedForALease(t *testing.T) {
	live := newLive()
	s := startSwarm(t, Defaults{}, live)
	a := addMysis(t, s.mem, "alpha", "autopilot", "autopilot")
	b := addMysis(t, s.mem, "bravo", "autopilot", "autopilot")
	c := addMysis(t, s.mem, "charlie", "autopilot", "autopilot")
	until := time.Date(2026, 11, 26, 20, 0, 15, 0, time.UTC)
	live.set(a.GetId(), "runner-dead", &mysis.Status{Credits: 900, Turns: 44})
	live.set(b.GetId(), "runner-live", &mysis.Status{Credits: 100, Turns: 2})
	live.mu.Lock()
	live.silent[a.GetId()] = until
	live.silent[c.GetId()] = until // no owner any more: nothing is paused
	live.mu.Unlock()
	resp, err := s.api.ListMyses(context.Background(), &runnerv1.ListMysesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*runnerv1.MysisStatus{}
	for _, m := range resp.GetMyses() {
		got[m.GetMysis().GetName()] = m
	}
	if p := got["alpha"].GetPausedUntil(); p == nil || !p.AsTime().Equal(until) {
		t.Errorf("alpha (silent holder): paused_until %v, want %v", p, until)
	}
	for _, name := range []string{"bravo", "charlie"} {
		if p := got[name].GetPausedUntil(); p != nil {
			t.Errorf("%s: paused_until %v, want none", name, p.AsTime())
		}
	}
}

// TestListMysesAsksUsageInChunks: a page of more than usageChunk myses asks their usage usageChunk myses a request
// (a request for 1,000 ids costs more than five of 200), and every mysis of the page gets its own.
func TestListMysesAsksUsageInChunks(t *testing.T) {
	s := startSwarm(t, Defaults{}, newLive())
	ctx := context.Background()
	const n = 2*usageChunk + 50
	for i := range n {
		addMysis(t, s.mem, fmt.Sprintf("m-%04d", i), "autopilot", "autopilot")
	}
	var mu sync.Mutex
	var sizes []int
	s.spend.setUsage(func(r *memoryv1.GetUsageRequest) (*memoryv1.GetUsageResponse, error) {
		mu.Lock()
		sizes = append(sizes, len(r.GetMysisIds()))
		mu.Unlock()
		resp := &memoryv1.GetUsageResponse{Total: &memoryv1.UsageTotals{}}
		for _, id := range r.GetMysisIds() {
			resp.Rows = append(resp.Rows, &memoryv1.UsageRow{MysisId: id, Totals: &memoryv1.UsageTotals{Calls: 1}})
		}
		return resp, nil
	})
	page, err := s.api.ListMyses(ctx, &runnerv1.ListMysesRequest{PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.GetMyses()) != n {
		t.Fatalf("%d myses listed, want %d", len(page.GetMyses()), n)
	}
	for _, st := range page.GetMyses() {
		if st.GetUsage().GetCalls() != 1 {
			t.Fatalf("%s has usage %v", st.GetMysis().GetName(), st.GetUsage())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(sizes, []int{usageChunk, usageChunk, 50}) {
		t.Errorf("usage requests named %v myses, want %d, %d and 50", sizes, usageChunk, usageChunk)
	}
}

// The list carries each mysis's effective spend limits, as GetMysis does: the console's spend page reads them from
// the list (issue 46: a mysis idled by its limit showed "no mysis has a spend limit").
func TestListMysesCarriesSpendLimits(t *testing.T) {
	s := startSwarm(t, Defaults{SpendLimits: []usage.Limit{{Window: usage.Hour, Unit: usage.Tokens, Amount: 100000}}}, newLive())
	ctx := context.Background()
	a := addMysis(t, s.mem, "alpha", "autopilot", "autopilot")
	addMysis(t, s.mem, "bravo", "autopilot", "autopilot")
	s.spend.setOwn(a.GetId(), spendLimit(day, cost, 5e9))
	page, err := s.api.ListMyses(ctx, &runnerv1.ListMysesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]*memoryv1.SpendLimit{
		"alpha": {spendLimit(hour, tokens, 100000), spendLimit(day, cost, 5e9)},
		"bravo": {spendLimit(hour, tokens, 100000)},
	}
	if len(page.GetMyses()) != 2 {
		t.Fatalf("listed %s", nameList(page.GetMyses()))
	}
	for _, st := range page.GetMyses() {
		if w := want[st.GetMysis().GetName()]; !equalLimits(st.GetSpendLimits(), w) {
			t.Errorf("%s: spend limits %v, want %v", st.GetMysis().GetName(), st.GetSpendLimits(), w)
		}
	}
}
