package mcpserver

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
)

// Some actions' v1 answers (which the engine gives) differ from their v2 response types in the published v2
// description: v2 renames, adds or drops fields. These patches turn the v1 answer into the v2 one, per tool/action,
// on the v2 surfaces only (for a mutation, on its details). What they cannot derive stays a documented difference
// (docs/SPACEMOLT.md, "API v2 results").

// v2Patch edits one answer (as a JSON object) for the call c.
type v2Patch func(m map[string]any, c call, e *game.Engine)

var v2Patches = map[string]v2Patch{
	"spacemolt/dock": func(m map[string]any, c call, e *game.Engine) {
		// v2 DockResponse: {action, base, story, station_condition}; v1 answers {command, pending, message}.
		story, _ := m["message"].(string)
		base := ""
		if gs := e.PeekState(c.sid); gs != nil && gs.Location != nil && gs.Location.DockedAt != nil {
			base = *gs.Location.DockedAt
		}
		clear(m)
		m["action"], m["base"], m["story"], m["station_condition"] = "dock", base, story, map[string]any{}
	},
	"spacemolt/travel": func(m map[string]any, _ call, _ *game.Engine) {
		if _, ok := m["offline_collapsed"]; !ok {
			m["offline_collapsed"] = 0
		}
	},
	"spacemolt/get_nearby": func(m map[string]any, _ call, _ *game.Engine) {
		m["empire_npcs"], m["empire_npc_count"], m["creatures"], m["creature_count"] = []any{}, 0, []any{}, 0
	},
	"spacemolt/get_notifications": func(m map[string]any, _ call, e *game.Engine) {
		m["timestamp"] = e.Config().Now().Unix()
		delete(m, "message")
	},
	"spacemolt_auth/register": func(m map[string]any, c call, _ *game.Engine) {
		// v2's RegisterResponse names the account at the top level too.
		m["username"], m["empire"] = c.args.str("username"), c.args.str("empire")
	},
	"spacemolt_auth/logout": func(m map[string]any, _ call, _ *game.Engine) { delete(m, "ok") },
	"spacemolt_auth/login": func(m map[string]any, _ call, _ *game.Engine) {
		if _, ok := m["pending_trades"]; !ok {
			m["pending_trades"] = []any{}
		}
		delete(m, "captains_log")
	},
	"spacemolt_market/view_market": func(m map[string]any, _ call, e *game.Engine) {
		m["action"], m["base"], m["current_tick"] = "view_market", m["base_id"], e.CurrentTick()
	},
	"spacemolt_social/chat": func(m map[string]any, _ call, _ *game.Engine) {
		// v2 sent_at is a Unix time; v1's is RFC 3339.
		if s, ok := m["sent_at"].(string); ok {
			if t, err := time.Parse(time.RFC3339, s); err == nil {
				m["sent_at"] = t.Unix()
			}
		}
		m["message"] = "Message sent to " + strOf(m["channel"]) + "."
		delete(m, "recipients")
		delete(m, "action") // v1's ChatResult names its action; v2's ChatResponse does not
	},
	"spacemolt_social/captains_log_add": func(m map[string]any, _ call, _ *game.Engine) { delete(m, "total_count") },
	"spacemolt_catalog": func(m map[string]any, _ call, _ *game.Engine) {
		items, _ := m["items"].([]any)
		m["page"], m["page_size"], m["total_pages"] = 1, len(items), 1
		m["message"] = strconv.Itoa(len(items)) + " " + strOf(m["type"]) + "."
	},
}

func strOf(v any) string {
	s, _ := v.(string)
	return s
}

// patchedV2 wraps run with the patch of tool/action, when there is one.
func (s *Server) patchedV2(key string, run func(ctx context.Context, c call) (any, error)) func(ctx context.Context, c call) (any, error) {
	p, ok := v2Patches[key]
	if !ok || run == nil {
		return run
	}
	return func(ctx context.Context, c call) (any, error) {
		res, err := run(ctx, c)
		if err != nil {
			return res, err
		}
		if a, isAnswer := res.(*v2Answer); isAnswer {
			if gs, isState := a.state.(*game.GameState); isState && gs.Details != nil {
				if m, ok := asMap(gs.Details); ok {
					p(m, c, s.engine)
					gs.Details = m
				}
			}
			return a, nil
		}
		m, ok := asMap(res)
		if !ok {
			return res, nil
		}
		p(m, c, s.engine)
		return m, nil
	}
}

func asMap(v any) (map[string]any, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}
