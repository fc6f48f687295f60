package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/present"
	composerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/composer/v1"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
)

// anatomyMessage is one message of the next request as the anatomy page shows it.
type anatomyMessage struct {
	Index      int
	Role       string
	Name       string
	CallID     string
	Tokens     int
	Reasons    string
	Memories   string
	Synthetic  string
	InProgress bool
	Content    string
	Calls      []callView
	// PrefixEnd marks the last message of the prefix that stays the same from one request to the next.
	PrefixEnd bool
}

// anatomy is the page's view of a composed request: present.ExplainPreview's messages and dropped entries, the
// token sections, and the composer's decisions.
type anatomy struct {
	Messages     []anatomyMessage
	Dropped      []string
	Repairs      []string
	Sections     [][2]string
	MessageSum   int
	Tools        int32
	Priming      int32
	Total        int32
	Budget       int32
	Unattributed int
	Tokenizer    string
	Prefix       string
	Compaction   []string
	Dispositions string
	// ToolDefs is every tool definition sent with the request, in order, with its share of Tools.
	ToolDefs []toolDef
}

// toolDef is one tool definition of the tool block: what the model is told about the tool and what it costs.
type toolDef struct {
	Name, Description, Parameters string
	Tokens                        int32
}

// toolDefs pairs the definitions the runner sent with the composer's count of each (by position, which both keep;
// by name should a count be missing from its place).
func toolDefs(defs []*composerv1.ToolDefinition, counts []*composerv1.ToolTokens) []toolDef {
	byName := make(map[string]int32, len(counts))
	for _, c := range counts {
		byName[c.GetName()] = c.GetTokens()
	}
	out := make([]toolDef, len(defs))
	for i, d := range defs {
		n, ok := byName[d.GetName()]
		if i < len(counts) && counts[i].GetName() == d.GetName() {
			n, ok = counts[i].GetTokens(), true
		}
		if !ok {
			n = -1
		}
		params := d.GetParametersJson()
		var b bytes.Buffer
		if json.Indent(&b, []byte(params), "", "  ") == nil {
			params = b.String()
		}
		out[i] = toolDef{Name: present.Safe(d.GetName()), Description: present.Safe(d.GetDescription()),
			Parameters: present.Safe(params), Tokens: n}
	}
	return out
}

// stableTail is the synthetic kinds Zoea adds at the end of one request only: the prefix before the first of them
// is what the next request starts with too, between compactions.
var stableTail = map[string]bool{"nudge": true, "missing_result": true}

func buildAnatomy(p present.Preview, man *composerv1.Manifest, enc *composerv1.Encouragement, tools []*composerv1.ToolDefinition) anatomy {
	a := anatomy{Budget: p.Budget, Tokenizer: man.GetTokenizer(), ToolDefs: toolDefs(tools, man.GetTools())}
	prefixEnd := len(p.Messages) - 1
	for i, m := range p.Messages {
		if stableTail[m.Synthetic] && i-1 < prefixEnd {
			prefixEnd = i - 1
			break
		}
	}
	for i, m := range p.Messages {
		msg := m.Message
		am := anatomyMessage{Index: m.Index, Role: present.Role(msg.GetRole()), Name: present.Safe(msg.GetName()),
			CallID: present.Safe(msg.GetToolCallId()), Tokens: m.Tokens, Reasons: present.Safe(strings.Join(m.Reasons, "; ")),
			Synthetic: m.Synthetic, InProgress: m.InProgress, Content: present.Safe(msg.GetContent()), PrefixEnd: i == prefixEnd}
		if len(m.Memories) > 0 {
			ids := make([]string, len(m.Memories))
			for j, id := range m.Memories {
				ids[j] = fmt.Sprintf("#%d", id)
			}
			am.Memories = strings.Join(ids, ", ")
		}
		for _, tc := range msg.GetToolCalls() {
			am.Calls = append(am.Calls, callView{Name: present.Safe(tc.GetName()), Args: present.Safe(tc.GetArgumentsJson())})
		}
		a.MessageSum += m.Tokens
		a.Messages = append(a.Messages, am)
	}
	for _, e := range p.Dropped {
		a.Dropped = append(a.Dropped, present.Safe(fmt.Sprintf("memory #%d, seq %d (%d tokens): %s", e.GetMemoryId(), e.GetSeq(), e.GetTokens(), e.GetReason())))
	}
	for _, r := range p.Repairs {
		a.Repairs = append(a.Repairs, present.Safe(r))
	}
	t := p.Tokens
	a.Tools, a.Total = t.GetTools(), t.GetTotal()
	sections := []struct {
		name string
		n    int32
	}{{"system", t.GetSystem()}, {"mission", t.GetMission()}, {"carried", t.GetCarried()}, {"history", t.GetHistory()},
		{"current turn", t.GetCurrentTurn()}, {"synthetic", t.GetSynthetic()}, {"tools", t.GetTools()}}
	var inMessages, all int32
	for _, sc := range sections {
		a.Sections = append(a.Sections, [2]string{sc.name, present.Grouped(int64(sc.n))})
		all += sc.n
		if sc.name != "tools" {
			inMessages += sc.n
		}
	}
	// The composer's total is every section plus the tokens that prime the reply.
	a.Priming = t.GetTotal() - all
	a.Unattributed = int(inMessages) - a.MessageSum
	if prefixEnd >= 0 && prefixEnd < len(a.Messages) {
		sum := 0
		for _, m := range a.Messages[:prefixEnd+1] {
			sum += m.Tokens
		}
		a.Prefix = fmt.Sprintf("messages 0–%d (%s tokens, and the %s tokens of the tool block sent with them)", prefixEnd,
			present.Grouped(int64(sum)), present.Grouped(int64(t.GetTools())))
	}
	a.Compaction = append(a.Compaction, fmt.Sprintf("compaction boundary at seq %d: memories from it on are sent as stored, "+
		"append-only until the next compaction; older ones are compacted into carried state", man.GetCompactionBoundarySeq()))
	if man.GetCompactionSeq() > 0 {
		a.Compaction = append(a.Compaction, fmt.Sprintf("the boundary last moved when the newest memory was seq %d", man.GetCompactionSeq()))
	}
	if man.GetTurnTruncated() {
		a.Compaction = append(a.Compaction, "the current turn is longer than the policy keeps: its oldest rows were left out")
	}
	if man.GetNudgeLevel() > 0 {
		a.Compaction = append(a.Compaction, fmt.Sprintf("nudge level %d (1 gentle, 2 firm, 3 urgent)", man.GetNudgeLevel()))
	}
	if enc != nil {
		act := strings.ToLower(strings.TrimPrefix(enc.GetAction().String(), "ENCOURAGEMENT_ACTION_"))
		a.Compaction = append(a.Compaction, fmt.Sprintf("encouragement counter: %s (next %d)", act, enc.GetNextCount()))
	}
	counts := map[composerv1.Disposition]int{}
	for _, e := range man.GetEntries() {
		counts[e.GetDisposition()]++
	}
	var parts []string
	for _, d := range []composerv1.Disposition{composerv1.Disposition_DISPOSITION_INCLUDED, composerv1.Disposition_DISPOSITION_STUBBED,
		composerv1.Disposition_DISPOSITION_TRUNCATED, composerv1.Disposition_DISPOSITION_DROPPED} {
		if counts[d] > 0 {
			name := strings.ToLower(strings.TrimPrefix(d.String(), "DISPOSITION_"))
			if name == "truncated" {
				name = "cut"
			}
			parts = append(parts, fmt.Sprintf("%d %s", counts[d], name))
		}
	}
	a.Dispositions = strings.Join(parts, ", ")
	return a
}

func (s *Server) anatomyPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.call(r)
	defer cancel()
	st, ok := s.pathMysis(ctx, w, r)
	if !ok {
		return
	}
	resp, err := s.b.Preview(ctx, st.GetMysis().GetId())
	if err != nil {
		s.failed(w, r, err, present.Subject{Mysis: r.PathValue("mysis"), Service: "runner"})
		return
	}
	running := st.GetMysis().GetState() == memoryv1.MysisState_MYSIS_STATE_RUNNING
	a := buildAnatomy(present.ExplainPreview(resp, running), resp.GetManifest(), resp.GetEncouragement(), resp.GetTools())
	s.render(w, r, http.StatusOK, "anatomy", map[string]any{"Name": present.Safe(st.GetMysis().GetName()),
		"Ref": st.GetMysis().GetName(), "A": a})
}
