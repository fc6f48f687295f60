package histgen

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
)

// Shapes of play (composition v3, issue 28): recorded LLM play mostly gets a new objective every 20–30 calls, which
// the original generator (objectives of 150–400 calls) did not hold. A shape sets how many calls an objective lasts.

// Shape is how long objectives last in a generated session.
type Shape string

// Shapes.
const (
	ShapeDefault Shape = ""      // objectives of 150–400 calls (the generator before v3)
	ShapeShort   Shape = "short" // 15–40 calls
	ShapeLong    Shape = "long"  // 300–1,000 calls
	ShapeMixed   Shape = "mixed" // each objective short (70%) or long (30%)
)

// Shapes lists the shapes the v3 benchmark reports, in table order.
func Shapes() []Shape { return []Shape{ShapeShort, ShapeLong, ShapeMixed} }

// RealOptions shape a generated session.
type RealOptions struct {
	Shape Shape
	// V2 plays SpaceMolt's MCP v2 endpoint: the same calls as action-dispatched tools (spacemolt with action
	// get_status, spacemolt_market with action view_market, …), so the same play can be replayed on both endpoints.
	V2 bool
}

// objectiveCalls draws the calls until the next objective.
func (pg *realGen) objectiveCalls() int {
	switch pg.opts.Shape {
	case ShapeShort:
		return pg.between(15, 40)
	case ShapeLong:
		return pg.between(300, 1000)
	case ShapeMixed:
		if pg.chance(0.7) {
			return pg.between(15, 40)
		}
		return pg.between(300, 1000)
	}
	return pg.between(150, 400)
}

// Fact is a planted fact: a piece of one tool result (a price, an id, an item) that appears nowhere else in the
// session, and the requests at which the model needs it again, N calls later within the same objective.
type Fact struct {
	Row  int    // index in Rows of the result holding it
	Text string // the fact, a substring of that result found in no other row
	// Asks are indexes in Requests: the requests, 10, 30, 100 and 300 calls after the fact, that ask for it.
	Asks []int
}

// factGaps are the distances, in tool calls, at which a planted fact is asked for again.
var factGaps = []int{10, 30, 100, 300}

// plantFacts picks, in every objective, the first result (after the objective's first three calls) whose call is
// not repeated later in the objective and that holds a 32-byte piece found in no other row, and the requests that
// ask for it again. The generator does not change its play for them: a model that asks for a fact would search or
// read it; the measure is whether the request holds it or names where it is.
func (pg *realGen) plantFacts() {
	rows := pg.s.Rows
	p := compose.DefaultPolicy()
	args := map[string]string{}
	for _, m := range rows {
		for _, tc := range m.ToolCalls {
			args[tc.ID] = tc.Arguments
		}
	}
	var starts []int
	for i, m := range rows {
		if m.Role == chat.RoleUser && m.SenderID == "" && (m.Source == compose.SourceBroadcast || m.Source == compose.SourceDirect) {
			starts = append(starts, i)
		}
	}
	starts = append(starts, len(rows))
	reqAfter := func(row int) int { // index of the first request at or after row
		for k, at := range pg.s.Requests {
			if at >= row {
				return k
			}
		}
		return len(pg.s.Requests)
	}
	for o := 0; o+1 < len(starts); o++ {
		from, to := starts[o], starts[o+1]
		calls := 0
		for i := from; i < to; i++ {
			m := rows[i]
			if m.Role != chat.RoleTool {
				continue
			}
			calls++
			if calls <= 3 || len(m.Content) < 64 || strings.HasPrefix(m.Content, "Error") || m.ToolName == "login" || m.ToolName == "register" {
				continue
			}
			key := p.CallKey(m.ToolName, args[m.ToolCallID])
			repeated := false
			for j := i + 1; j < to && !repeated; j++ {
				repeated = rows[j].Role == chat.RoleTool && p.CallKey(rows[j].ToolName, args[rows[j].ToolCallID]) == key
			}
			if repeated {
				continue
			}
			text := uniquePiece(rows, i)
			if text == "" {
				continue
			}
			f := Fact{Row: i, Text: text}
			for _, gap := range factGaps {
				// The row after the gap-th call after the fact, if the objective lasts that long.
				n, at := 0, -1
				for j := i + 1; j < to; j++ {
					if rows[j].Role == chat.RoleTool {
						n++
						if n == gap {
							at = j + 1
							break
						}
					}
				}
				if at < 0 {
					break
				}
				if k := reqAfter(at); k < len(pg.s.Requests) && pg.s.Requests[k] < to {
					f.Asks = append(f.Asks, k)
				}
			}
			if len(f.Asks) > 0 {
				pg.s.Facts = append(pg.s.Facts, f)
			}
			break
		}
	}
}

// uniquePiece returns a 32-byte piece of rows[i].Content, from its first 1,000 bytes (well inside any result cap),
// that no other row contains, or "".
func uniquePiece(rows []compose.Memory, i int) string {
	c := rows[i].Content
	for off := 0; off+32 <= min(len(c), 1000); off += 24 {
		piece := c[off : off+32]
		if !isASCII(piece) {
			continue
		}
		unique := true
		for j := range rows {
			if j != i && strings.Contains(rows[j].Content, piece) {
				unique = false
				break
			}
		}
		if unique {
			return piece
		}
	}
	return ""
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// v2Tools maps the generator's legacy tools to SpaceMolt MCP v2's action-dispatched tools (public docs,
// connections.md: core play under "spacemolt", auth, ship, market, social and catalog in their own tools). Zoea's
// own tools (zoea_search_*) are the runner's, the same on both endpoints.
var v2Tools = map[string]string{
	"login": "spacemolt_auth", "register": "spacemolt_auth",
	"get_ship": "spacemolt_ship", "view_market": "spacemolt_market",
	"chat": "spacemolt_social", "captains_log_add": "spacemolt_social", "captains_log_list": "spacemolt_social",
	"catalog": "spacemolt_catalog",
}

// toV2 rewrites a legacy session's calls as the same commands on the v2 endpoint: tool spacemolt_* with an
// "action" argument first (spacemolt_catalog takes none), results unchanged.
func toV2(rows []compose.Memory) {
	for i := range rows {
		m := &rows[i]
		for k, tc := range m.ToolCalls {
			m.ToolCalls[k].Name, m.ToolCalls[k].Arguments = v2Call(tc.Name, tc.Arguments)
		}
		if m.Role == chat.RoleTool {
			m.ToolName, _ = v2Call(m.ToolName, "{}")
		}
	}
}

func v2Call(name, args string) (string, string) {
	if strings.HasPrefix(name, "zoea_") {
		return name, args
	}
	tool, ok := v2Tools[name]
	if !ok {
		tool = "spacemolt"
	}
	if tool == "spacemolt_catalog" {
		return tool, args
	}
	a := strings.TrimSpace(args)
	var v map[string]json.RawMessage
	if json.Unmarshal([]byte(a), &v) != nil {
		return tool, args
	}
	action := fmt.Sprintf(`{"action":%q`, name)
	if len(v) == 0 {
		return tool, action + "}"
	}
	return tool, action + "," + strings.TrimPrefix(a, "{")
}
