package mcpserver

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/zoeaswarm/zoea/services/spacemolt-sim/internal/game"
)

// paramType is a JSON-schema type a tool parameter accepts.
type paramType string

const (
	tString  paramType = "string"
	tInteger paramType = "integer"
	tBoolean paramType = "boolean"
)

type param struct {
	name     string
	typ      paramType
	desc     string
	required bool
	enum     []string
	// enumByGame: the enum is advertised in the schema but checked by the game, which answers with its own code
	// (register's empire: invalid_empire, as on the live server).
	enumByGame bool
}

// sessionParam is accepted by every tool, as on the live server.
var sessionParam = param{name: "session_id", typ: tString, desc: "Game session id from login/register. Optional: the login is also bound to your MCP session."}

// inputSchema builds the tool's JSON schema, parameters in their declared order. It deliberately leaves
// additionalProperties open: unknown parameters must reach the handler so it can answer as the real server does
// (ignore them, or invalid_payload on movement) instead of with an SDK error.
func inputSchema(params []param) *jsonschema.Schema {
	schema := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	for _, p := range append(slices.Clone(params), sessionParam) {
		prop := &jsonschema.Schema{Type: string(p.typ), Description: p.desc}
		for _, e := range p.enum {
			prop.Enum = append(prop.Enum, e)
		}
		schema.Properties[p.name] = prop
		schema.PropertyOrder = append(schema.PropertyOrder, p.name)
		if p.required {
			schema.Required = append(schema.Required, p.name)
		}
	}
	return schema
}

// usage is the hint the real server appends to invalid_payload errors.
func usage(params []param) string {
	var req, opt []string
	for _, p := range params {
		s := "'" + p.name + "' (" + string(p.typ) + ")"
		if p.required {
			req = append(req, s)
		} else {
			opt = append(opt, s)
		}
	}
	var b strings.Builder
	if len(req) > 0 {
		b.WriteString("Requires " + strings.Join(req, ", ") + ".")
	}
	if len(opt) > 0 {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		b.WriteString("Optional: " + strings.Join(opt, ", ") + ".")
	}
	if b.Len() == 0 {
		b.WriteString("Takes no parameters (besides session_id).")
	}
	return b.String()
}

// example is the hint the live server ends an invalid_payload with: a call that would be accepted, its required
// parameters with stand-in values (an enum's first value, 1, true, or the parameter's name in angle brackets).
func example(params []param) string {
	var parts []string
	for _, p := range params {
		if !p.required {
			continue
		}
		v := `"<` + p.name + `>"`
		switch {
		case len(p.enum) > 0:
			v = strconv.Quote(p.enum[0])
		case p.typ == tInteger:
			v = "1"
		case p.typ == tBoolean:
			v = "true"
		}
		parts = append(parts, strconv.Quote(p.name)+": "+v)
	}
	return "Example: {" + strings.Join(parts, ", ") + "}"
}

// args are a call's validated arguments.
type args struct {
	raw map[string]json.RawMessage
}

// parseArgs checks raw tool arguments against params the way the real server does: missing parameters and wrong
// types are invalid_payload, and so are unknown parameters when strict (movement); otherwise they are ignored.
func parseArgs(raw json.RawMessage, params []param, strict bool) (args, error) {
	a := args{raw: map[string]json.RawMessage{}}
	if t := strings.TrimSpace(string(raw)); t != "" && t != "null" && t != "{}" {
		if err := json.Unmarshal(raw, &a.raw); err != nil {
			return a, invalid("Arguments must be a JSON object. " + usage(params) + " " + example(params))
		}
	}
	var unknown []string
	for k := range a.raw {
		if k != sessionParam.name && !slices.ContainsFunc(params, func(p param) bool { return p.name == k }) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 && !strict {
		for _, k := range unknown {
			delete(a.raw, k)
		}
		unknown = nil
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return a, invalid("Unknown parameter(s): [" + strings.Join(unknown, ", ") + "]. " + usage(params) + " " + example(params))
	}
	var missing []string
	for _, p := range append(slices.Clone(params), sessionParam) {
		v, ok := a.raw[p.name]
		if !ok || string(v) == "null" {
			delete(a.raw, p.name)
			if p.required {
				missing = append(missing, p.name)
			}
			continue
		}
		if err := checkType(p, v); err != nil {
			return a, invalid(err.Error() + " " + usage(params) + " " + example(params))
		}
	}
	if len(missing) > 0 {
		return a, invalid("Missing required parameter(s): [" + strings.Join(missing, ", ") + "]. " + usage(params) + " " + example(params))
	}
	return a, nil
}

type typeError string

func (e typeError) Error() string { return string(e) }

func checkType(p param, v json.RawMessage) error {
	switch p.typ {
	case tString:
		var s string
		if json.Unmarshal(v, &s) != nil {
			return typeError("Parameter '" + p.name + "' must be a string.")
		}
		if len(p.enum) > 0 && !p.enumByGame && !slices.Contains(p.enum, s) {
			return typeError("Parameter '" + p.name + "' must be one of " + strings.Join(p.enum, ", ") + ".")
		}
	case tInteger:
		if _, ok := toInt(v); !ok {
			return typeError("Parameter '" + p.name + "' must be an integer.")
		}
	case tBoolean:
		if _, ok := toBool(v); !ok {
			return typeError("Parameter '" + p.name + "' must be a boolean.")
		}
	}
	return nil
}

// toInt accepts JSON integers and, as LLMs often send them, numeric strings.
func toInt(v json.RawMessage) (int, bool) {
	var f float64
	if json.Unmarshal(v, &f) == nil {
		if f != math.Trunc(f) || math.Abs(f) > 1e15 { // room for prices above the 1e12 cap (price_too_high), exact in a float64
			return 0, false
		}
		return int(f), true
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		return n, err == nil
	}
	return 0, false
}

func toBool(v json.RawMessage) (bool, bool) {
	var b bool
	if json.Unmarshal(v, &b) == nil {
		return b, true
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		return b, err == nil
	}
	return false, false
}

func (a args) str(name string) string {
	var s string
	_ = json.Unmarshal(a.raw[name], &s)
	return s
}

func (a args) int(name string, def int) int {
	if v, ok := a.raw[name]; ok {
		n, _ := toInt(v)
		return n
	}
	return def
}

func (a args) bool(name string, def bool) bool {
	if v, ok := a.raw[name]; ok {
		b, _ := toBool(v)
		return b
	}
	return def
}

func invalid(msg string) error { return &game.Error{Code: game.CodeInvalidPayload, Message: msg} }
