package benchkit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents", ACL 2024,
// github.com/snap-research/locomo) is ten long two-person conversations (19–35 sessions, 369–689 turns each) with
// about 2,000 annotated questions, each naming the dialog turns that hold its answer ("D3:12": session 3, turn 12).
// Its repository carries no licence file (its dataset card says CC BY-NC 4.0), so none of its data is in this
// repository: `memorybench recall -locomo PATH` reads a local copy — the repository's data/locomo10.json, or the
// directory of per-conversation files that data/locomo10.zip unpacks to — and nothing is fetched at run time.

// locomoConv is one conversation: its turns in order and its questions.
type locomoConv struct {
	id        string
	turns     []locomoTurn
	questions []locomoQuestion
}

type locomoTurn struct {
	diaID   string
	speaker string
	text    string
	first   bool // spoken by speaker_a (stored as the commander's words), else by speaker_b (the mysis's)
	session int
}

type locomoQuestion struct {
	text     string
	category int
	evidence []string // dialog ids
}

// locomoCategories are the question categories with an answer in the conversation (1 multi-hop, 2 temporal,
// 3 open-domain, 4 single-hop); category 5 is adversarial (unanswerable) and is not a recall question.
var locomoCategories = map[int]bool{1: true, 2: true, 3: true, 4: true}

var diaIDRe = regexp.MustCompile(`D\d+:\d+`)

// loadLoCoMo reads path: a JSON file holding an array of samples ({"sample_id", "conversation": {...}, "qa": [...]})
// or one sample, or a directory of such files (data/locomo10.zip's per-conversation files, whose sample is the
// conversation object itself with "qa" beside the sessions).
func loadLoCoMo(path string) ([]locomoConv, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("-locomo: %w (get the data from github.com/snap-research/locomo: data/locomo10.json, or unzip data/locomo10.zip)", err)
	}
	var files []string
	if st.IsDir() {
		if files, err = filepath.Glob(filepath.Join(path, "*.json")); err != nil {
			return nil, err
		}
		sort.Strings(files)
	} else {
		files = []string{path}
	}
	var out []locomoConv
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var samples []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &samples); err != nil {
			var one map[string]json.RawMessage
			if err := json.Unmarshal(raw, &one); err != nil {
				return nil, fmt.Errorf("%s: not a LoCoMo sample or array of samples: %w", f, err)
			}
			samples = []map[string]json.RawMessage{one}
		}
		for i, s := range samples {
			id := strings.TrimSuffix(filepath.Base(f), ".json")
			if len(samples) > 1 {
				id = strconv.Itoa(i)
			}
			if raw, ok := s["sample_id"]; ok {
				_ = json.Unmarshal(raw, &id)
			}
			c, err := parseLoCoMoSample(id, s)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-locomo %s: no conversations found", path)
	}
	return out, nil
}

func parseLoCoMoSample(id string, s map[string]json.RawMessage) (locomoConv, error) {
	conv := s
	if raw, ok := s["conversation"]; ok {
		if err := json.Unmarshal(raw, &conv); err != nil {
			return locomoConv{}, fmt.Errorf("conversation: %w", err)
		}
	}
	var speakerA string
	_ = json.Unmarshal(conv["speaker_a"], &speakerA)
	var sessions []int
	for k := range conv {
		if n, ok := strings.CutPrefix(k, "session_"); ok {
			if i, err := strconv.Atoi(n); err == nil {
				sessions = append(sessions, i)
			}
		}
	}
	sort.Ints(sessions)
	c := locomoConv{id: id}
	for _, si := range sessions {
		var turns []struct {
			Speaker string `json:"speaker"`
			DiaID   string `json:"dia_id"`
			Text    string `json:"text"`
			Caption string `json:"blip_caption"`
		}
		if err := json.Unmarshal(conv["session_"+strconv.Itoa(si)], &turns); err != nil {
			return locomoConv{}, fmt.Errorf("session_%d: %w", si, err)
		}
		for _, t := range turns {
			text := t.Text
			if t.Caption != "" {
				text += " [shares " + t.Caption + "]"
			}
			c.turns = append(c.turns, locomoTurn{diaID: t.DiaID, speaker: t.Speaker, text: text,
				first: t.Speaker == speakerA, session: si})
		}
	}
	var qa []struct {
		Question string          `json:"question"`
		Category int             `json:"category"`
		Evidence json.RawMessage `json:"evidence"`
	}
	if err := json.Unmarshal(s["qa"], &qa); err != nil {
		return locomoConv{}, fmt.Errorf("qa: %w", err)
	}
	for _, q := range qa {
		// Evidence is a list of dialog ids, a few written as "D8:6; D9:17" in one string: take every id in it.
		c.questions = append(c.questions, locomoQuestion{text: q.Question, category: q.Category,
			evidence: diaIDRe.FindAllString(string(q.Evidence), -1)})
	}
	return c, nil
}
