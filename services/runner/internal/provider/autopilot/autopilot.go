// Package autopilot is a deterministic SpaceMolt player behind the llm.Provider interface. It reads the tool results
// of the current turn and answers with the next tool call of the starter loop (undock, travel to the belt, mine
// until the hold is full, travel back, dock, sell, refuel), or with a short summary that ends the turn. It needs no
// network and no model, so the whole runner (composer, memory, tools, leases) can be demonstrated offline and
// load-tested with hundreds of myses whose behaviour is reproducible.
package autopilot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
	"github.com/zoeaswarm/zoea/services/runner/internal/provider/internal/callid"
)

// DefaultName is the registry name used when Config.Name is empty.
const DefaultName = "autopilot"

// Config tunes the player. The zero value plays SpaceMolt's starter loop in the home system.
type Config struct {
	// Name is the registry name (default "autopilot").
	Name string
	// MaxToolIterations ends a turn after this many tool calls (default 6), so that every turn finishes with an
	// assistant answer and the runner's turn pacing, nudges and composition are exercised as with a model.
	MaxToolIterations int
	// Station is the POI with the market (default "sol_central"); Belt the asteroid belt (default "main_belt").
	Station, Belt string
	// RefuelBelow is the fuel fraction under which a docked ship refuels (default 0.6).
	RefuelBelow float64
}

// Provider is the autopilot. It holds no state between calls and is safe for concurrent use.
type Provider struct {
	cfg Config
}

// New returns an autopilot with cfg's unset fields defaulted.
func New(cfg Config) (*Provider, error) {
	cfg.Name = cmp.Or(cfg.Name, DefaultName)
	cfg.Station = cmp.Or(cfg.Station, "sol_central")
	cfg.Belt = cmp.Or(cfg.Belt, "main_belt")
	if cfg.MaxToolIterations == 0 {
		cfg.MaxToolIterations = 6
	}
	if cfg.RefuelBelow == 0 {
		cfg.RefuelBelow = 0.6
	}
	if cfg.MaxToolIterations < 1 {
		return nil, fmt.Errorf("autopilot: MaxToolIterations %d must be positive", cfg.MaxToolIterations)
	}
	if cfg.RefuelBelow < 0 || cfg.RefuelBelow > 1 {
		return nil, fmt.Errorf("autopilot: RefuelBelow %v must be between 0 and 1", cfg.RefuelBelow)
	}
	if cfg.Station == cfg.Belt {
		return nil, errors.New("autopilot: Station and Belt must differ")
	}
	return &Provider{cfg: cfg}, nil
}

// Name implements llm.Provider.
func (p *Provider) Name() string { return p.cfg.Name }

// Chat implements llm.Provider: one decision per call, at most one tool call.
func (p *Provider) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return llm.Response{}, err
	}
	available := map[string]bool{}
	for _, t := range req.Tools {
		available[t.Name] = true
	}
	v2 := isV2(available)
	if v2 {
		available = legacyAvailable(available)
	}
	d := p.decide(readTurn(req.Messages), available)
	if v2 && d.tool != "" {
		d.tool, d.args = toV2(d.tool, d.args)
	}

	msg := chat.Message{Role: chat.RoleAssistant, Content: d.text}
	if d.tool != "" {
		msg.ToolCalls = []chat.ToolCall{{
			ID:        callid.New(req.Messages, d.tool+"\x00"+d.args, 0),
			Name:      d.tool,
			Arguments: d.args,
		}}
	}
	return llm.Response{Message: msg, Reasoning: d.why, Usage: usage(req, msg, d.why)}, nil
}

// decision is either a tool call (tool, args) or a closing text; why becomes the reasoning.
type decision struct {
	tool, args string
	text       string
	why        string
}

func call(tool, args, why string) decision { return decision{tool: tool, args: args, why: why} }

// decide is the policy. The order matters: turn-ending conditions first, then "look before acting", then the
// starter loop by position.
func (p *Provider) decide(s *turnState, available map[string]bool) decision {
	if !available["get_status"] {
		return decision{text: "I cannot see my ship: get_status is not among my tools, so I am waiting.",
			why: "get_status is unavailable; without it every action would be a guess."}
	}
	if s.justSold {
		return p.finish(s, "Just sold cargo; that completes a trip, so the turn ends here.")
	}
	if s.iterations >= p.cfg.MaxToolIterations {
		return p.finish(s, fmt.Sprintf("Used %d tool calls this turn; ending it and continuing next turn.", s.iterations))
	}
	if s.errorStreak >= 3 {
		return p.finish(s, fmt.Sprintf("Three failures in a row (last: %s %s); pausing until next turn.", s.lastTool, s.lastErrCode))
	}
	if s.rateLimited >= 2 {
		// Reads count against the limit too: hammering get_status between refusals only extends the lockout.
		return p.finish(s, "Rate limited twice this turn; waiting for the next turn before acting again.")
	}
	if !s.seenStatus || s.needStatus {
		why := "Starting the turn: checking status first."
		if s.lastErrCode != "" {
			why = fmt.Sprintf("%s failed with %s; re-reading status before acting again.", s.lastTool, s.lastErrCode)
		}
		return call("get_status", "{}", why)
	}
	if s.inTransit {
		return p.finish(s, fmt.Sprintf("In transit to %s (arrives in %ds); waiting for arrival.", cmp.Or(s.transitTo, "my destination"), s.arrivesIn))
	}
	if s.poi == "" {
		return p.finish(s, "Status shows no POI and no transit; waiting for the position to settle.")
	}
	if s.noFuel {
		return p.finish(s, fmt.Sprintf("Out of fuel (%s) at %s; I cannot move and need help.", s.fuelText(), s.poi))
	}
	if s.docked {
		return p.docked(s, available)
	}
	if s.poi == p.cfg.Station {
		return p.atStation(s, available)
	}
	return p.inSpace(s, available)
}

func (p *Provider) docked(s *turnState, available map[string]bool) decision {
	if s.cargoUsed > 0 {
		if it, ok := s.sellable(); ok && (s.cargoChecked || !available["get_cargo"]) {
			return p.use(available, call("sell", sellArgs(it),
				fmt.Sprintf("Docked at %s with %d %s in cargo (cargo %s); selling it.", s.poi, it.qty, it.id, s.cargoText())))
		}
		if !s.cargoChecked && available["get_cargo"] {
			return call("get_cargo", "{}", fmt.Sprintf("Docked with cargo %s; checking what is in the hold before selling.", s.cargoText()))
		}
	}
	if p.fuelLow(s) && !s.refuelled && !s.refuelFail && available["refuel"] {
		return call("refuel", "{}", fmt.Sprintf("Fuel %s is below %d%%; refuelling while docked.", s.fuelText(), int(p.cfg.RefuelBelow*100)))
	}
	if s.cargoMax > 0 && s.cargoUsed >= s.cargoMax {
		return p.finish(s, fmt.Sprintf("The hold is full (%s) of cargo this station will not buy; waiting for prices to recover.", s.cargoText()))
	}
	return p.use(available, call("undock", "{}", fmt.Sprintf("Docked with cargo %s and fuel %s; undocking to go mining.", s.cargoText(), s.fuelText())))
}

func (p *Provider) atStation(s *turnState, available map[string]bool) decision {
	_, sellable := s.sellable()
	if s.cargoUsed > 0 && (sellable || !s.cargoChecked) {
		return p.use(available, call("dock", "{}", fmt.Sprintf("At %s with cargo %s; docking to sell.", s.poi, s.cargoText())))
	}
	if p.fuelLow(s) && !s.refuelled && !s.refuelFail && available["refuel"] {
		return p.use(available, call("dock", "{}", fmt.Sprintf("At %s with fuel %s; docking to refuel.", s.poi, s.fuelText())))
	}
	if s.beltEmpty {
		return p.finish(s, fmt.Sprintf("%s is mined out for now; waiting for the deposits to refill.", p.cfg.Belt))
	}
	if s.cargoFull {
		return p.finish(s, fmt.Sprintf("The hold is full (%s) and nothing in it sells here; waiting.", s.cargoText()))
	}
	return p.use(available, call("travel", targetArgs(p.cfg.Belt),
		fmt.Sprintf("Undocked at %s with free cargo (%s); travelling to %s.", s.poi, s.cargoText(), p.cfg.Belt)))
}

func (p *Provider) inSpace(s *turnState, available map[string]bool) decision {
	if s.cargoFull {
		return p.use(available, call("travel", targetArgs(p.cfg.Station),
			fmt.Sprintf("Cargo %s, heading to %s to sell.", s.cargoText(), p.cfg.Station)))
	}
	if s.beltEmpty {
		if s.cargoUsed > 0 {
			return p.use(available, call("travel", targetArgs(p.cfg.Station),
				fmt.Sprintf("%s is too sparse to mine; taking cargo %s to %s.", s.poi, s.cargoText(), p.cfg.Station)))
		}
		return p.finish(s, fmt.Sprintf("%s is too sparse to mine and the hold is empty; waiting for it to refill.", s.poi))
	}
	if s.poi != p.cfg.Belt {
		return p.use(available, call("travel", targetArgs(p.cfg.Belt),
			fmt.Sprintf("At %s, not at the belt; travelling to %s to mine.", s.poi, p.cfg.Belt)))
	}
	return p.use(available, call("mine", "{}", fmt.Sprintf("At %s with cargo %s; mining.", s.poi, s.cargoText())))
}

// use returns d if its tool is offered; otherwise it ends the turn, since calling a tool the runner did not list
// would only produce an unknown_tool error.
func (p *Provider) use(available map[string]bool, d decision) decision {
	if available[d.tool] {
		return d
	}
	return decision{
		text: fmt.Sprintf("I want to %s but that tool is not available to me; waiting.", d.tool),
		why:  d.why + " But " + d.tool + " is not among my tools.",
	}
}

// finish ends the turn with a summary of what happened and where the ship stands.
func (p *Provider) finish(s *turnState, why string) decision {
	var b strings.Builder
	if len(s.done) > 0 {
		b.WriteString(capitalise(strings.Join(s.done, "; ")))
		b.WriteString(". ")
	}
	if s.seenStatus {
		where := "in transit"
		switch {
		case s.docked:
			where = "docked at " + s.poi
		case s.poi != "":
			where = "at " + s.poi
		}
		fmt.Fprintf(&b, "Now %s, cargo %s, fuel %s", where, s.cargoText(), s.fuelText())
		if s.hasCredits {
			fmt.Fprintf(&b, ", %d credits", s.credits)
		}
		b.WriteString(".")
	}
	return decision{text: strings.TrimSpace(cmp.Or(b.String(), why)), why: why}
}

func (p *Provider) fuelLow(s *turnState) bool {
	return s.fuelMax > 0 && float64(s.fuel) < p.cfg.RefuelBelow*float64(s.fuelMax)
}

func (s *turnState) cargoText() string {
	return strconv.Itoa(s.cargoUsed) + "/" + strconv.Itoa(s.cargoMax)
}
func (s *turnState) fuelText() string { return strconv.Itoa(s.fuel) + "/" + strconv.Itoa(s.fuelMax) }

func sellArgs(it cargoItem) string {
	return `{"item_id":` + strconv.Quote(it.id) + `,"quantity":` + strconv.Itoa(it.qty) + `}`
}

func targetArgs(poi string) string { return `{"target_poi":` + strconv.Quote(poi) + `}` }

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// usage estimates tokens as characters / 4, the usual rule of thumb, so dashboards and budgets see plausible
// numbers for autopilot myses.
func usage(req llm.Request, out chat.Message, reasoning string) llm.Usage {
	in := 0
	for _, m := range req.Messages {
		in += len(m.Role) + len(m.Content) + len(m.Name) + len(m.ToolCallID)
		for _, c := range m.ToolCalls {
			in += len(c.ID) + len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		in += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	outLen := len(out.Content) + len(reasoning)
	for _, c := range out.ToolCalls {
		outLen += len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	return llm.Usage{PromptTokens: (in + 3) / 4, CompletionTokens: (outLen + 3) / 4}
}
