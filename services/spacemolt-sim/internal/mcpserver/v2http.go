package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
)

// The HTTP API v2 (internal/httpapi) plays the same action table and result shaping as /mcp/v2; these are the entry
// points it uses. Its game sessions are v2 ones (game.PoolV2), so a login over HTTP and one over /mcp/v2 are of the
// same pool, as the live server's v2 surfaces share their schemas.

// V2Result is the answer of one HTTP API v2 command.
type V2Result struct {
	// Structured is the structuredContent of a success.
	Structured json.RawMessage
	// Text is the prose (or rendered) result of a success.
	Text string
	// Err is the game's refusal; Structured and Text are empty then.
	Err *game.Error
	// SessionID is the game session a login or register started (empty otherwise).
	SessionID string
}

// V2Action names one HTTP API v2 command: a tool and an action ("" for spacemolt_catalog, which takes none).
type V2Action struct {
	Tool, Action string
	Mutation     bool
	Description  string
	Params       []V2Param
}

// V2Param is one parameter of a V2Action.
type V2Param struct {
	Name, Type, Description string
	Required                bool
}

// V2Actions lists every tool/action the v2 endpoints serve, for the HTTP API's routes and its OpenAPI document.
func (s *Server) V2Actions() []V2Action {
	var out []V2Action
	for _, t := range s.v2Tools() {
		for _, a := range t.actions {
			va := V2Action{Tool: t.name, Action: a.name, Mutation: !a.readOnly, Description: a.desc}
			if t.noAction {
				va.Action = ""
			}
			for _, p := range a.params {
				va.Params = append(va.Params, V2Param{Name: p.name, Type: string(p.typ), Description: p.desc, Required: p.required})
			}
			out = append(out, va)
		}
	}
	return out
}

// CallV2 runs tool's action with the JSON object body for the game session sid (empty before a login). auth, when
// set, is asked before a login or register (the per-address limit). An unknown tool is reported with ok false.
func (s *Server) CallV2(ctx context.Context, toolName, action string, body json.RawMessage, sid string, auth func() error) (res *V2Result, ok bool, err error) {
	tools := s.v2Tools()
	i := slices.IndexFunc(tools, func(t v2Tool) bool { return t.name == toolName })
	if i < 0 {
		return nil, false, nil
	}
	t := tools[i]
	args := map[string]json.RawMessage{}
	if len(body) > 0 && string(body) != "null" {
		if err := json.Unmarshal(body, &args); err != nil {
			s.engine.CountRejected(sid)
			return &V2Result{Err: &game.Error{Code: game.CodeInvalidPayload, Message: "The body must be a JSON object."}}, true, nil
		}
	}
	if !t.noAction {
		a, _ := json.Marshal(action)
		args[actionParam] = a
	}
	raw, _ := json.Marshal(args)
	tl, b, err := resolveV2(t, raw)
	if err != nil {
		s.engine.CountRejected(sid)
		return v2Failure(err)
	}
	a, err := parseArgs(b, tl.params, tl.strict)
	c := call{sid: sid, args: a}
	if err != nil {
		s.engine.CountRejected(c.sid)
		return v2Failure(err)
	}
	if tl.binds && auth != nil {
		if err := auth(); err != nil {
			return v2Failure(err)
		}
	}
	out, err := tl.run(ctx, c)
	if err != nil {
		return v2Failure(err)
	}
	r, err := s.render(out, nil)
	if err != nil {
		return nil, true, err
	}
	res = &V2Result{SessionID: sessionIDOf(out)}
	if len(r.Content) > 0 {
		if tc, isText := r.Content[0].(*mcp.TextContent); isText {
			res.Text = tc.Text
		}
	}
	switch sc := r.StructuredContent.(type) {
	case json.RawMessage:
		res.Structured = sc
	case nil:
	default:
		if res.Structured, err = json.Marshal(sc); err != nil {
			return nil, true, err
		}
	}
	return res, true, nil
}

func v2Failure(err error) (*V2Result, bool, error) {
	var ge *game.Error
	if !errors.As(err, &ge) {
		return nil, true, err
	}
	return &V2Result{Err: ge}, true, nil
}

// AuthAttempt applies the per-address limit on session creation, login and register (shared with the MCP
// endpoints) to one attempt from ip; nil when it may go ahead, else the rate_limited error with retry_after.
func (g *Guard) AuthAttempt(ip string) error {
	if g == nil {
		return nil
	}
	if wait, ok := g.authAttempt(ip, g.opts.Now()); !ok {
		return authLimited(g.opts.AuthPerMinute, wait)
	}
	return nil
}
