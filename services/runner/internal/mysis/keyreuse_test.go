package mysis

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/services/runner/internal/llm"
)

// Another writer (a replica that held the mysis at the same time) stores its reply to the same request just before
// this actor's: the memory service refuses the actor's reply under the taken key (issue 41, finding 4), and the
// actor neither errors nor acts on a reply the history does not hold. The other reply stands, this actor's paid
// call is recorded on its own saying why its reply was not stored, and the next turn goes on from the history.
func TestAnotherWritersReplyStands(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, rec, _ := secretHarness(t, "unused-secret-value", time.Hour)
		var raced atomic.Bool
		h.store.beforeAppend = func(ms []NewMemory) {
			if len(ms) == 1 && strings.HasPrefix(ms[0].IdempotencyKey, "llm:") && raced.CompareAndSwap(false, true) {
				other := ms[0]
				other.Content, other.ToolCalls, other.LlmCall = "The other replica's answer.", nil, nil
				if _, err := h.store.Append(context.Background(), testID, []NewMemory{other}); err != nil {
					t.Error(err)
				}
			}
		}
		h.provider.script = func(int, llm.Request) (llm.Response, error) { return reply("My answer."), nil }
		h.start()
		h.eventually("a turn of its own", func() bool { return h.actor.Status().Turns >= 1 })
		h.stop()

		var answers []string
		for _, m := range h.store.all(testID) {
			if m.Role == chat.RoleAssistant {
				answers = append(answers, m.Content)
			}
		}
		if len(answers) != 2 || answers[0] != "The other replica's answer." || answers[1] != "My answer." {
			t.Errorf("assistant memories %q: want the other writer's reply, then this actor's next turn", answers)
		}
		for _, ch := range h.store.stateLog() {
			if ch.To == StateErrored {
				t.Errorf("the mysis went errored: %q", ch.Reason)
			}
		}
		found := false
		for _, c := range rec.calls {
			found = found || strings.Contains(c.Error, "reply not stored: another writer")
		}
		if !found {
			t.Errorf("the refused reply's call is not recorded: %+v", rec.calls)
		}
	})
}
