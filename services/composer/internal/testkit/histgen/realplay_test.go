package histgen_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/composer/internal/compose"
	"github.com/zoeaswarm/zoea/services/composer/internal/testkit/histgen"
)

func TestRealPlayIsDeterministic(t *testing.T) {
	p := histgen.Personalities()[1]
	a, b := histgen.RealPlay(7, 300, p), histgen.RealPlay(7, 300, p)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two sessions from the same seed differ")
	}
	if c := histgen.RealPlay(8, 300, p); reflect.DeepEqual(a.Rows, c.Rows) {
		t.Fatal("sessions from different seeds are identical")
	}
}

// TestRealPlayShape checks the properties the benchmark relies on, over every personality: a commander mission first,
// login or register as the first call, at least the asked number of calls, requests exactly at the assistant rows,
// every call answered right after its message, result sizes from tiny to 50–200 KB maps, repeated reads with the
// same and with other arguments, missions changing, and turns of 20–50 calls for the personalities without text
// replies between loops.
func TestRealPlayShape(t *testing.T) {
	var sizes []int
	var maps, parallel, textBetween, missions, withArgs, sameArgs int
	for i, pers := range histgen.Personalities() {
		for seed := range uint64(3) {
			s := histgen.RealPlay(seed*31+uint64(i), 320, pers)
			if s.Calls < 320 {
				t.Fatalf("%s: %d calls, want ≥ 320", pers.Name, s.Calls)
			}
			if r := s.Rows[0]; r.Role != chat.RoleUser || r.Source != compose.SourceBroadcast || !strings.HasPrefix(r.Content, "Commander:") {
				t.Fatalf("%s: first row %+v is not a commander mission", pers.Name, r)
			}
			if first := s.Rows[1]; len(first.ToolCalls) != 1 || (first.ToolCalls[0].Name != "login" && first.ToolCalls[0].Name != "register") {
				t.Fatalf("%s: first call %+v is not login/register", pers.Name, first.ToolCalls)
			}
			var req []int
			seen := map[string]int{}
			for k, r := range s.Rows {
				if k > 0 && r.Seq != s.Rows[k-1].Seq+1 {
					t.Fatalf("seq not contiguous at %d", k)
				}
				switch {
				case r.Role == chat.RoleAssistant:
					req = append(req, k)
					if len(r.ToolCalls) > 1 {
						parallel++
					}
					for j, tc := range r.ToolCalls {
						res := s.Rows[k+1+j]
						if res.Role != chat.RoleTool || res.ToolCallID != tc.ID || res.ToolName != tc.Name {
							t.Fatalf("%s: call %s not answered in order: %+v", pers.Name, tc.ID, res)
						}
						if !json.Valid([]byte(tc.Arguments)) {
							t.Fatalf("arguments %q are not JSON", tc.Arguments)
						}
						key := tc.Name + tc.Arguments
						if n := seen[key]; n > 0 && (tc.Name == "get_status" || tc.Name == "view_market") {
							sameArgs++
						}
						seen[key]++
						if tc.Name == "view_market" && tc.Arguments != "{}" {
							withArgs++
						}
					}
					if len(r.ToolCalls) == 0 && k+1 < len(s.Rows) && s.Rows[k+1].Source == compose.SourceNudge &&
						k > 0 && s.Rows[k-1].Role == chat.RoleTool && strings.Contains(r.Content, "Next I'll") {
						textBetween++
					}
				case r.Role == chat.RoleTool:
					sizes = append(sizes, len(r.Content))
					if r.ToolName == "get_map" && !strings.HasPrefix(r.Content, "Error:") {
						maps++
						if len(r.Content) < 50_000 || len(r.Content) > 200_000 {
							t.Errorf("get_map result is %d bytes, want 50–200 KB", len(r.Content))
						}
					}
				case r.Role == chat.RoleUser && strings.HasPrefix(r.Content, "Commander:"):
					missions++
				}
			}
			if !slices.Equal(req, s.Requests) {
				t.Fatalf("%s: requests are not the assistant rows", pers.Name)
			}
		}
	}
	slices.Sort(sizes)
	q := func(f float64) int { return sizes[int(f*float64(len(sizes)-1))] }
	t.Logf("results: %d; bytes p1 %d p10 %d p50 %d p90 %d p99 %d max %d; get_map %d; parallel messages %d; text between loops %d; missions %d",
		len(sizes), q(0.01), q(0.1), q(0.5), q(0.9), q(0.99), sizes[len(sizes)-1], maps, parallel, textBetween, missions)
	switch {
	case sizes[0] > 20:
		t.Errorf("smallest result is %d bytes; real play has results of a dozen characters", sizes[0])
	case q(0.99) < 2000 || q(0.99) > 5000:
		t.Errorf("p99 result is %d bytes, want a few KB", q(0.99))
	case maps == 0:
		t.Error("no get_map in 15 sessions")
	case parallel == 0 || textBetween == 0:
		t.Errorf("parallel %d, text between loops %d: both must occur", parallel, textBetween)
	case missions < 15+5:
		t.Errorf("%d missions in 15 sessions: missions must change every few hundred calls", missions)
	case withArgs == 0 || sameArgs == 0:
		t.Errorf("view_market with arguments %d, repeated identical reads %d: both must occur", withArgs, sameArgs)
	}
}

func TestRealPlayTurnLengths(t *testing.T) {
	grinder := histgen.Personalities()[0]
	s := histgen.RealPlay(3, 400, grinder)
	calls := 0
	var lengths []int
	for _, r := range s.Rows {
		switch {
		case r.Role == chat.RoleUser:
			if calls > 0 {
				lengths = append(lengths, calls)
			}
			calls = 0
		case r.Role == chat.RoleAssistant:
			calls += len(r.ToolCalls)
		}
	}
	for _, n := range lengths {
		if n < 20 || n > 54 { // a last parallel message may overshoot 50 by up to 4 calls
			t.Fatalf("grinder turn of %d calls, want 20–50: %v", n, lengths)
		}
	}
}
