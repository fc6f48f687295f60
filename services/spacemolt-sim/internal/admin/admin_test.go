package admin_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/admin"
	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
)

func serve(t *testing.T, token string) (*httptest.Server, *game.Engine) {
	t.Helper()
	e := game.New(game.Config{Seed: 3})
	mux := http.NewServeMux()
	admin.Register(mux, e, admin.Options{Token: token})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts, e
}

func do(t *testing.T, method, url, token string, into any) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if into != nil && resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

func TestStatsAndReset(t *testing.T) {
	ts, e := serve(t, "")
	if _, err := e.Register("scorer", "solarian", ""); err != nil {
		t.Fatal(err)
	}
	e.Tick()
	e.Tick()
	var st struct {
		CurrentTick int64 `json:"current_tick"`
		Players     []struct {
			Username      string `json:"username"`
			Credits       int    `json:"credits"`
			CreditsEarned int    `json:"credits_earned"`
			OreMined      int    `json:"ore_mined"`
			Calls         int64  `json:"calls"`
			Errors        int64  `json:"errors"`
			Ticks         int    `json:"ticks"`
		} `json:"players"`
		Totals struct {
			Players int `json:"players"`
			Credits int `json:"credits"`
		} `json:"totals"`
		TickStats struct {
			Resolved int64 `json:"resolved"`
		} `json:"tick_stats"`
	}
	if code := do(t, http.MethodGet, ts.URL+"/admin/stats", "", &st); code != http.StatusOK {
		t.Fatalf("stats: HTTP %d", code)
	}
	if st.CurrentTick != 2 || len(st.Players) != 1 || st.Players[0].Username != "scorer" || st.Players[0].Credits != 100 ||
		st.Totals.Players != 1 || st.Totals.Credits != 100 || st.TickStats.Resolved != 2 {
		t.Fatalf("stats = %+v", st)
	}
	if code := do(t, http.MethodGet, ts.URL+"/admin/reset", "", nil); code != http.StatusMethodNotAllowed {
		t.Fatalf("GET reset: HTTP %d, want 405", code)
	}
	if code := do(t, http.MethodPost, ts.URL+"/admin/reset", "", nil); code != http.StatusOK {
		t.Fatalf("reset: HTTP %d", code)
	}
	do(t, http.MethodGet, ts.URL+"/admin/stats", "", &st)
	if st.CurrentTick != 0 || len(st.Players) != 0 {
		t.Fatalf("after reset = %+v", st)
	}
	var h map[string]any
	if code := do(t, http.MethodGet, ts.URL+"/healthz", "", &h); code != http.StatusOK || h["status"] != "ok" {
		t.Fatalf("healthz: %d %v", code, h)
	}
}

func TestAdminToken(t *testing.T) {
	ts, _ := serve(t, "tok")
	if code := do(t, http.MethodGet, ts.URL+"/admin/stats", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("stats without token: HTTP %d", code)
	}
	if code := do(t, http.MethodPost, ts.URL+"/admin/reset", "wrong", nil); code != http.StatusUnauthorized {
		t.Fatalf("reset with wrong token: HTTP %d", code)
	}
	if code := do(t, http.MethodGet, ts.URL+"/admin/stats", "tok", nil); code != http.StatusOK {
		t.Fatalf("stats with token: HTTP %d", code)
	}
	if code := do(t, http.MethodGet, ts.URL+"/healthz", "", nil); code != http.StatusOK {
		t.Fatalf("healthz needs no token: HTTP %d", code)
	}
}

type restarter struct{ in, down time.Duration }

func (r *restarter) ScheduleRestart(in, down time.Duration) time.Time {
	r.in, r.down = in, down
	return time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC).Add(in)
}

func TestRestartEndpoint(t *testing.T) {
	e := game.New(game.Config{Seed: 3})
	r := &restarter{}
	mux := http.NewServeMux()
	admin.Register(mux, e, admin.Options{Token: "tok", Restarter: r})
	ts := httptest.NewServer(mux)
	defer ts.Close()
	if code := do(t, http.MethodPost, ts.URL+"/admin/restart", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("without the token: %d", code)
	}
	if code := do(t, http.MethodPost, ts.URL+"/admin/restart", "tok", nil); code != http.StatusOK || r.in != 60*time.Second || r.down != 2*time.Second {
		t.Fatalf("defaults: %d, in %v, downtime %v; want 200, 60s, 2s", code, r.in, r.down)
	}
	if code := do(t, http.MethodPost, ts.URL+"/admin/restart?in=5s&downtime=10s", "tok", nil); code != http.StatusOK || r.in != 5*time.Second || r.down != 10*time.Second {
		t.Fatalf("explicit: %d, in %v, downtime %v", code, r.in, r.down)
	}
	if code := do(t, http.MethodPost, ts.URL+"/admin/restart?in=soon", "tok", nil); code != http.StatusBadRequest {
		t.Fatalf("in=soon: %d, want 400", code)
	}
}
