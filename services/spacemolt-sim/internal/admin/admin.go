// Package admin serves the simulator's operator endpoints on the MCP listener:
// POST /admin/reset, GET /admin/stats and GET /healthz. A swarm run is scored
// from /admin/stats.
package admin

import (
	"crypto/subtle"
	"encoding/json"
	"log/slog"
	"net/http"

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
