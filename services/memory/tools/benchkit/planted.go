package benchkit

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/zoeaswarm/zoea/services/memory/internal/memory"
)

// Planted facts: a generated SpaceMolt history with facts written into it at every age, from its first rows to
// its newest, each asked about afterwards the way a model asks — in its own words. A question shares a few content
// words with its fact (a name, a station, an item), never the whole sentence, and often only in another form:
// irregular verbs (bought → buy, lost → lose, flew → went), plurals, a game id written as words (copper_ore →
// "copper ore"), a synonym where the fact's verb would give it away (rendezvous → meet). Each template is planted
// many times with different slot values, so the other plants are the distractors a question must not prefer.

// factTemplate is one fact and a question about it; {name}, {station}, {station2}, {ore}, {ore_words}, {item},
// {n}, {p} and {code} are filled per plant. commander: the fact is a commander's order, else the mysis's own log.
type factTemplate struct {
	fact, question string
	commander      bool
}

var factTemplates = []factTemplate{
	{"Rendezvous with the {name} convoy at {station} once the {ore} is sold.", "Where am I supposed to meet the {name} convoy?", true},
	{"The dock master of {station} says its refinery closes at tick {n}.", "When does the refinery at {station} shut down?", false},
	{"I bought {n} units of {ore} at {station} for {p} credits each.", "How much did I pay per unit when buying {ore_words} at {station}?", false},
	{"Pirates ambushed my ship near {station}; I lost {n} drones and half the hull.", "How many drones did I lose in the pirate ambush?", false},
	{"{name} taught me that the jump gate at {station} needs {n} fuel.", "How much fuel does the jump gate at {station} need?", false},
	{"Never sell {ore} below {p} credits; the {name} guild buys it later.", "What is the lowest price I may sell {ore_words} for?", true},
	{"Found a derelict freighter drifting at {station} with {n} crates of {ore}.", "Where did I find the abandoned freighter?", false},
	{"{name} flew to {station} and came back with a cracked shield generator.", "Who went to {station} and what broke?", false},
	{"The {name} syndicate offered {p} credits for escorting their haulers through {station}.", "How much does the {name} syndicate pay for an escort?", false},
	{"The access code for the {station} vault is {code}.", "What's the code to open the vault at {station}?", true},
	{"Warning: the beacon at {station} broadcasts fake distress calls, ignore it.", "Which beacon sends fake distress signals?", true},
	{"We agreed with {name} to split the mining profits {n} to {p}.", "How did {name} and I agree to divide the mining profit?", false},
	{"My sister {name} starts flight school at {station} next week.", "When does {name} begin flight school?", true},
	{"Tested the new {item}: it mined {n} ore per tick at {station}.", "How much ore does the {item} mine per tick?", false},
	{"{name} lost {p} credits gambling at the {station} casino.", "How many credits did {name} lose at the casino?", false},
	{"Ran out of fuel twice between {station} and {station2}; carry spare fuel cells on that route.", "On which route did I run out of fuel?", false},
	{"{name} is our contact at {station}; speak to them before docking.", "Who should I talk to at {station}?", true},
	{"Sold the spare {item} to {name} for {p} credits.", "Who did I sell my spare {item} to?", false},
	{"The {station} shipyard repaints hulls for {p} credits; {name} chose crimson.", "What colour did {name} pick for the hull?", false},
	{"Saw a cloaked warship leaving {station}, heading for {station2}.", "Where was the cloaked warship going when I saw it?", false},
	{"The {name} family keeps bees on the hydroponics deck of {station}.", "Who keeps bees at {station}?", false},
	{"Our next meeting with the {name} traders is on day {n} at {station}.", "When do we meet the {name} traders again?", true},
	{"The scanner showed {n} asteroids rich in {ore} around {station}.", "How many {ore_words} asteroids are near {station}?", false},
	{"{name} borrowed {p} credits and promised to repay them by tick {n}.", "When will {name} pay back the loan?", false},
}

var (
	plantNames = []string{"Ortiz", "Nakamura", "Okafor", "Lindqvist", "Moreau", "Petrov", "Haddad", "Kowalski",
		"Achebe", "Tanaka", "Ferreira", "Novak", "Brennan", "Ivanova", "Castillo", "Mbeki", "Larsen", "Quinn",
		"Delacroix", "Sato", "Rahman", "Volkov", "Abara", "Whitlock", "Marchetti", "Osei", "Halvorsen", "Zhou"}
	plantStations = []string{"Kepler Station", "Vega Prime", "Halcyon Dock", "Meridian Outpost", "Tarsis Ring",
		"Corvid Yard", "Aurora Spire", "Basalt Hold", "Cinder Reach", "Drift Harbor", "Ember Gate", "Frost Anchor",
		"Gilded Perch", "Hollow Crown", "Iron Lantern", "Jade Terrace", "Kestrel Point", "Lumen Bay", "Marrow Deep",
		"Nadir Port", "Obsidian Quay", "Pale Orchard", "Quartz Haven", "Rust Chapel"}
	plantItems = []string{"mining laser", "cargo expander", "shield booster", "fuel scoop", "survey drone",
		"tractor beam", "afterburner", "repair kit", "sensor array", "ore refiner"}
	plantCodes = []string{"amber-seven", "north-ledger", "violet-nine", "cobalt-fox", "silent-harbor", "iron-sparrow"}
)

// plantedFact is one fact written into a history, its question and where it was written.
type plantedFact struct {
	seq      int64
	question string
	fact     string
	age      int64 // rows between it and the history's newest row
}

// fillFact fills a template's slots with values drawn from r.
func fillFact(r *rand.Rand, t factTemplate) (fact, question string) {
	ore := ores[r.IntN(len(ores))]
	s1 := plantStations[r.IntN(len(plantStations))]
	s2 := plantStations[r.IntN(len(plantStations))]
	for s2 == s1 {
		s2 = plantStations[r.IntN(len(plantStations))]
	}
	rep := strings.NewReplacer(
		"{name}", plantNames[r.IntN(len(plantNames))],
		"{station}", s1, "{station2}", s2,
		"{ore_words}", strings.ReplaceAll(ore, "_", " "), "{ore}", ore,
		"{item}", plantItems[r.IntN(len(plantItems))],
		"{n}", fmt.Sprint(2+r.IntN(400)), "{p}", fmt.Sprint(5+r.IntN(900)),
		"{code}", plantCodes[r.IntN(len(plantCodes))])
	return rep.Replace(t.fact), rep.Replace(t.question)
}

// plantAges are the distances back from a history's newest row at which facts are planted, beyond the history's
// size clipped to its oldest rows (so every history has facts in its first rows too).
var plantAges = []int64{20, 200, 2_000, 20_000, 200_000, 1_000_000}

// plantedHistory streams a history of size generated rows for mysis id with facts planted at every age in
// plantAges that fits (each template once per age, a fact every two rows around it) and once among its first rows.
// next feeds CopyMemories; facts are complete (ages set) once next has returned false.
type plantedHistory struct {
	id    string
	size  int64
	r     *rand.Rand
	h     *history
	plans map[int64][]factTemplate
	buf   []memory.Memory
	out   []memory.Memory
	gen   int64 // generated rows emitted
	seq   int64
	facts []plantedFact
}

func newPlantedHistory(seed uint64, id string, size int64) *plantedHistory {
	p := &plantedHistory{id: id, size: size, r: rand.New(rand.NewPCG(seed, 99)), h: newHistory(seed, benchEpoch, nil),
		plans: map[int64][]factTemplate{}}
	var at []int64
	for _, a := range plantAges {
		if a < size {
			at = append(at, size-a)
		}
	}
	at = append(at, 3)
	for _, s := range at {
		for i, t := range factTemplates {
			k := min(size, s+int64(2*i))
			p.plans[k] = append(p.plans[k], t)
		}
	}
	return p
}

func (p *plantedHistory) next() (memory.Memory, bool) {
	for len(p.out) == 0 {
		if p.gen >= p.size {
			for i := range p.facts {
				p.facts[i].age = p.seq - p.facts[i].seq
			}
			return memory.Memory{}, false
		}
		if len(p.buf) == 0 {
			p.buf = append(p.buf[:0], p.h.next(256)...)
		}
		g := p.buf[0]
		p.buf = p.buf[1:]
		p.gen++
		p.emit(g)
		for _, t := range p.plans[p.gen] {
			fact, q := fillFact(p.r, t)
			m := memory.Memory{Turn: g.Turn, CreatedAt: g.CreatedAt, Content: fact}
			if t.commander {
				m.Role, m.Source = memory.RoleUser, memory.SourceDirect
			} else {
				m.Role, m.Source = memory.RoleAssistant, memory.SourceLLM
				m.Content = "Captain's log: " + fact
			}
			p.emit(m)
			p.facts = append(p.facts, plantedFact{seq: p.seq, question: q, fact: fact})
		}
	}
	m := p.out[0]
	p.out = p.out[1:]
	return m, true
}

func (p *plantedHistory) emit(m memory.Memory) {
	p.seq++
	m.Seq, m.MysisID, m.IdempotencyKey = p.seq, p.id, ""
	m.BroadcastID = ""
	p.out = append(p.out, m)
}
