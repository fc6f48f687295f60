// Package admin serves the simulator's operator endpoints on the MCP listener:
// POST /admin/reset, POST /admin/restart, GET /admin/stats and GET /healthz. A swarm run is scored
// from /admin/stats.
package admin

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
)

// Game is what the admin endpoints need from the engine.
type Game interface {
	Reset()
	Stats() game.Stats
	CurrentTick() int64
}

// Options configure the endpoints.
type Options struct {
	// Token, when set, must be sent as "Authorization: Bearer <token>" to /admin/*.
	Token  string
	Logger *slog.Logger
	// Restarter, when set, serves POST /admin/restart.
	Restarter Restarter
}

// Restarter schedules a simulated server restart (mcpserver.Guard).
type Restarter interface {
	ScheduleRestart(in, downtime time.Duration) time.Time
}

// Register mounts the endpoints on mux.
func Register(mux *http.ServeMux, g Game, opts Options) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &handlers{g: g, opts: opts}
	mux.Handle("POST /admin/reset", h.auth(http.HandlerFunc(h.reset)))
	mux.Handle("GET /admin/stats", h.auth(http.HandlerFunc(h.stats)))
	mux.HandleFunc("GET /healthz", h.health)
	if opts.Restarter != nil {
		mux.Handle("POST /admin/restart", h.auth(http.HandlerFunc(h.restart)))
	}
}

type handlers struct {
	g    Game
	opts Options
}

func (h *handlers) auth(next http.Handler) http.Handler {
	if h.opts.Token == "" {
		return next
	}
	want := []byte("Bearer " + h.opts.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (h *handlers) reset(w http.ResponseWriter, r *http.Request) {
	h.g.Reset()
	h.opts.Logger.Info("world reset", "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "current_tick": h.g.CurrentTick()})
}

// restart schedules a restart like the live server's deploys: ?in= (default 60s) of warnings in every tool result,
// then every MCP and game session dropped and ?downtime= (default 2s) of HTTP 503 with Retry-After.
func (h *handlers) restart(w http.ResponseWriter, r *http.Request) {
	in, err := durationParam(r, "in", 60*time.Second)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	down, err := durationParam(r, "downtime", 2*time.Second)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	at := h.opts.Restarter.ScheduleRestart(in, down)
	h.opts.Logger.Info("restart scheduled", "at", at, "downtime", down, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "restart_at": at, "downtime_seconds": down.Seconds()})
}

func durationParam(r *http.Request, name string, def time.Duration) (time.Duration, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > time.Hour {
		return 0, fmt.Errorf("%s must be a duration from 0s to 1h, e.g. 60s", name)
	}
	return d, nil
}

func (h *handlers) stats(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, h.g.Stats())
}

func (h *handlers) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "current_tick": h.g.CurrentTick()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
