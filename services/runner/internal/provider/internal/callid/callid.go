// Package callid invents tool call ids for providers that send none (Ollama before 0.12, some OpenAI-compatible
// servers, the autopilot). The ids are derived from the conversation instead of drawn at random so that the same
// request yields the same reply byte for byte: replays, golden tests and provider prompt caches depend on it.
package callid

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"

	"github.com/zoeaswarm/zoea/libs/chat"
)

// New returns "call_<hash>_<index>", where hash covers the conversation so far and salt (the reply's content or the
// call itself). Every loop iteration appends to the conversation, so ids do not repeat within one history.
func New(conversation []chat.Message, salt string, index int) string {
	h := sha256.New()
	// chat.Message marshals deterministically (a struct of strings), and cannot fail.
	b, _ := json.Marshal(conversation)
	h.Write(b)
	h.Write([]byte{0})
	h.Write([]byte(salt))
	return "call_" + hex.EncodeToString(h.Sum(nil)[:6]) + "_" + strconv.Itoa(index)
}
