package tools

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/services/runner/internal/testkit/testenv"
)

// TestV2SessionAgainstSimulator plays the real simulator's /mcp/v2: login through spacemolt_auth, credentials hidden,
// a displaced login recovered, and a server restart announced mid-play: the next call waits the restart out inside
// the call, then re-initialises and logs in again, and the model reads only normal results.
func TestV2SessionAgainstSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the simulator")
	}
	sim := testenv.StartSim(t, "ZOEA_SIM_REGISTRATION_CODE=letmein", "ZOEA_SIM_TICK=50ms")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	accounts := newAccounts(t)
	r := NewRouter(Config{Endpoint: sim.MCPURL() + "/v2", RegistrationCode: "letmein"}, accounts, &fakeSearch{})
	s := r.Open(accounts.mysis(t, "Grace Hopper")).(*Session)
	defer s.Close()
	defs, err := s.Prepare(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !s.v2 || len(defs) != 16+4 {
		t.Fatalf("v2 %v with %d tools, want the 16 game tools and the 4 memory tools (3 searches and zoea_recall)", s.v2, len(defs))
	}
	do := func(name, args string) string {
		t.Helper()
		res, err := s.Call(ctx, call("c", name, args))
		if err != nil {
			t.Fatalf("%s %s: %v", name, args, err)
		}
		if res.IsError {
			t.Fatalf("%s %s: %s", name, args, res.Content)
		}
		for _, secret := range []string{accounts.stored()[0].Password, s.sessionID} {
			if secret != "" && strings.Contains(res.Content, secret) {
				t.Fatalf("%s result shows a credential: %s", name, res.Content)
			}
		}
		return res.Content
	}
	// v2's get_status is the state blob: the position is location.poi_id and location.docked_at.
	if st := do("spacemolt", `{"action":"get_status"}`); !strings.Contains(st, `"poi_id":"sol_central"`) || !strings.Contains(st, `"docked_at":"confederacy_central_command"`) {
		t.Fatalf("get_status text = %s", st)
	}
	// The model's own login is answered with the stored account.
	do("spacemolt_auth", `{"action":"login","username":"someone","password":"guess"}`)
	// A restart announced 1 s ahead, down for 1 s.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, sim.AdminURL()+"/restart?in=1s&downtime=1s", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("admin restart: %v %v", err, resp)
	}
	resp.Body.Close()
	do("spacemolt", `{"action":"get_status"}`) // carries the warning
	if s.pauseUntil.IsZero() {
		t.Fatal("the restart warning was not noticed")
	}
	do("spacemolt", `{"action":"undock"}`) // waits, then finds its MCP and game sessions gone
	if s.pauses != 1 || s.reconnects+s.relogins == 0 {
		t.Fatalf("pauses %d, reconnects %d, relogins %d; want a pause and a recovery", s.pauses, s.reconnects, s.relogins)
	}
	if st := do("spacemolt", `{"action":"get_status"}`); !strings.Contains(st, `"docked_at":null`) || !strings.Contains(st, `"poi_id":"sol_central"`) {
		t.Fatalf("after the restart get_status = %s", st)
	}
}
