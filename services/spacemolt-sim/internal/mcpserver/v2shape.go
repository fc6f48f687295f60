package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
)

// API v2 results (MCP /mcp/v2 and HTTP /api/v2) as the published v2 description gives them: state reads answer the
// canonical state blob (game.GameState), a mutation answers the sections it changed with its own result under
// details, and the text is prose. Other actions (auth, help, market, social, the system and POI reads) answer their
// own response object, as the description's per-action structuredContent types do.

// v2Answer is what a v2 action's run returns: the structuredContent and its prose.
type v2Answer struct {
	state any
	text  string
}

// v2Shape says how an action's answer becomes a v2 result.
type v2Shape int

const (
	shapePlain    v2Shape = iota // the action's own response object; text rendered from it
	shapeState                   // every state section (get_status, get_state)
	shapeShip                    // ship, modules, cargo and credits (get_ship)
	shapeCargo                   // cargo, ship capacity and credits (get_cargo)
	shapeMutation                // the changed sections plus details
)

// v2Shaped wraps an action's run so that it answers the v2 way.
func (s *Server) v2Shaped(shape v2Shape, run func(ctx context.Context, c call) (any, error)) func(ctx context.Context, c call) (any, error) {
	e := s.engine
	switch shape {
	case shapeState, shapeShip, shapeCargo:
		return func(_ context.Context, c call) (any, error) {
			gs, err := e.State(c.sid)
			if err != nil {
				return nil, err
			}
			switch shape {
			case shapeShip:
				gs = &game.GameState{Ship: gs.Ship, Modules: gs.Modules, Cargo: gs.Cargo, Credits: &gs.Player.Credits}
			case shapeCargo:
				gs = &game.GameState{Cargo: gs.Cargo, Ship: gs.Ship, Credits: &gs.Player.Credits}
			}
			return &v2Answer{state: gs, text: stateProse(gs)}, nil
		}
	case shapeMutation:
		return func(ctx context.Context, c call) (any, error) {
			before := e.PeekState(c.sid)
			res, err := run(ctx, c)
			if err != nil {
				return nil, err
			}
			after := e.PeekState(c.sid)
			delta := stateDelta(before, after)
			delta.Details = res
			return &v2Answer{state: delta, text: mutationProse(res, delta)}, nil
		}
	}
	return run
}

// stateDelta is after's sections that differ from before's (all of them when before is unknown), and always the
// queue.
func stateDelta(before, after *game.GameState) *game.GameState {
	out := &game.GameState{}
	if after == nil {
		return out
	}
	out.Queue = after.Queue
	if before == nil {
		out.Player, out.Ship, out.Modules, out.Cargo, out.Location = after.Player, after.Ship, after.Modules, after.Cargo, after.Location
		return out
	}
	if !sameJSON(before.Player, after.Player) {
		out.Player = after.Player
	}
	if !sameJSON(before.Ship, after.Ship) {
		out.Ship = after.Ship
	}
	if !sameJSON(before.Modules, after.Modules) {
		out.Modules = after.Modules
	}
	if !sameJSON(before.Cargo, after.Cargo) {
		out.Cargo = after.Cargo
	}
	if !sameJSON(before.Location, after.Location) {
		out.Location = after.Location
	}
	return out
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// stateProse renders the sections present as short lines of prose.
func stateProse(gs *game.GameState) string {
	var b strings.Builder
	if p := gs.Player; p != nil {
		fmt.Fprintf(&b, "%s (%s) — %d credits.\n", p.Username, p.Empire, p.Credits)
	} else if gs.Credits != nil {
		fmt.Fprintf(&b, "Credits: %d.\n", *gs.Credits)
	}
	if l := gs.Location; l != nil {
		switch {
		case l.InTransit && l.TransitType == "jump":
			fmt.Fprintf(&b, "In hyperspace to %s (arrives at tick %d).\n", nonEmpty(l.TransitDestSystemName, l.TransitDestSystemID), l.TransitArrivalTick)
		case l.InTransit:
			fmt.Fprintf(&b, "Travelling in %s to %s (arrives at tick %d).\n", nonEmpty(l.SystemName, l.SystemID), nonEmpty(l.TransitDestPOIName, l.TransitDestPOIID), l.TransitArrivalTick)
		default:
			dock := "undocked"
			if l.DockedAt != nil {
				dock = "docked at " + *l.DockedAt
			}
			fmt.Fprintf(&b, "Location: %s, %s (%s), %s.\n", nonEmpty(l.SystemName, l.SystemID), nonEmpty(l.POIName, l.POIID), l.POIType, dock)
			if len(l.Resources) > 0 {
				parts := make([]string, len(l.Resources))
				for i, r := range l.Resources {
					parts[i] = fmt.Sprintf("%s %d left", r.ItemID, r.Remaining)
				}
				fmt.Fprintf(&b, "Resources here: %s.\n", strings.Join(parts, ", "))
			}
			if l.NearbyPlayerCount > 0 {
				fmt.Fprintf(&b, "%d other ship(s) here.\n", l.NearbyPlayerCount)
			}
		}
	}
	if sh := gs.Ship; sh != nil {
		fmt.Fprintf(&b, "Ship %s (%s): hull %d/%d, shield %d/%d, fuel %d/%d, cargo %d/%d.\n", sh.Name, sh.ClassID,
			sh.Hull, sh.MaxHull, sh.Shield, sh.MaxShield, sh.Fuel, sh.MaxFuel, sh.CargoUsed, sh.CargoCapacity)
	}
	if gs.Cargo != nil {
		if len(*gs.Cargo) == 0 {
			b.WriteString("Cargo hold: empty.\n")
		} else {
			parts := make([]string, len(*gs.Cargo))
			for i, c := range *gs.Cargo {
				parts[i] = fmt.Sprintf("%s x%d", c.ItemID, c.Quantity)
			}
			fmt.Fprintf(&b, "Cargo hold: %s.\n", strings.Join(parts, ", "))
		}
	}
	if gs.Queue != nil && gs.Queue.HasPending {
		b.WriteString("An action is queued for the next tick.\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// mutationProse is the action's own message (or a summary of its result) followed by what changed.
func mutationProse(res any, delta *game.GameState) string {
	head := ""
	if b, err := json.Marshal(res); err == nil {
		var m map[string]any
		if json.Unmarshal(b, &m) == nil {
			if msg, ok := m["message"].(string); ok && msg != "" {
				head = msg
			} else if a, ok := m["action"].(string); ok && a != "" {
				head = "Done: " + a + "."
			} else if c, ok := m["command"].(string); ok && c != "" {
				head = "Done: " + c + "."
			}
		}
	}
	body := stateProse(&game.GameState{Player: delta.Player, Ship: delta.Ship, Cargo: delta.Cargo, Location: delta.Location})
	switch {
	case head == "":
		return body
	case body == "":
		return head
	}
	return head + "\n" + body
}

func nonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// VersionEntry is one release in get_version.
type VersionEntry struct {
	Version     string   `json:"version"`
	ReleaseDate string   `json:"release_date"`
	Notes       []string `json:"notes"`
}

// VersionResult answers get_version (the description's GetVersionResponse): the simulator's own build, one release.
type VersionResult struct {
	Version     string         `json:"version"`
	ReleaseDate string         `json:"release_date"`
	Notes       []string       `json:"notes"`
	Versions    []VersionEntry `json:"versions"`
	Page        int            `json:"page"`
	PerPage     int            `json:"per_page"`
	Total       int            `json:"total"`
	TotalPages  int            `json:"total_pages"`
	HasMore     bool           `json:"has_more"`
	SearchTerm  string         `json:"search_term,omitempty"`
}

func versionResult(version string, count, page int, text string) *VersionResult {
	notes := []string{"spacemolt-sim: the offline SpaceMolt simulator of the Zoea project (docs/SPACEMOLT.md)."}
	entry := VersionEntry{Version: version, ReleaseDate: "", Notes: notes}
	r := &VersionResult{Version: version, ReleaseDate: "", Notes: notes, Versions: []VersionEntry{entry}, Page: max(page, 1),
		PerPage: count, Total: 1, TotalPages: 1, SearchTerm: text}
	if count < 1 || count > 20 {
		r.PerPage = 5
	}
	if r.Page > 1 || (text != "" && !strings.Contains(strings.ToLower(notes[0]), strings.ToLower(text))) {
		r.Versions = []VersionEntry{}
		if text != "" {
			r.Total, r.TotalPages = 0, 0
		}
	}
	return r
}
