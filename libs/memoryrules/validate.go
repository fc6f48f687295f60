package memoryrules

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/zoeaswarm/zoea/libs/chat"
	"github.com/zoeaswarm/zoea/libs/errs"
	"github.com/zoeaswarm/zoea/libs/names"
	"github.com/zoeaswarm/zoea/libs/text"
)

// Field paths in errors use the API's field names ("memories[3].content") because that is what a caller can fix.

// CheckText rejects what Postgres cannot store as text (NUL bytes, invalid UTF-8) and anything longer than max
// bytes. It never alters the value: silently "fixing" content would break the byte-for-byte round trip.
func CheckText(field, s string, max int) error {
	if len(s) > max {
		return errs.InvalidField(field, "too long: %d bytes, at most %d", len(s), max)
	}
	if !utf8.ValidString(s) {
		return errs.InvalidField(field, "not valid UTF-8")
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		return errs.InvalidField(field, "contains a NUL byte at offset %d", i)
	}
	return nil
}

// ParseID validates a required UUID and returns its canonical lower-case form.
func ParseID(field, s string) (string, error) {
	if s == "" {
		return "", errs.InvalidField(field, "required")
	}
	u, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return "", errs.InvalidField(field, "not a UUID: %q", text.Clip(s, 64, "…"))
	}
	return u.String(), nil
}

// Limit applies a default and a cap to a requested count; negative is an error, 0 means the default, and values
// above max are lowered to max (like AIP-158 page sizes) so generous clients still work.
func Limit(field string, v, def, max int) (int, error) {
	switch {
	case v < 0:
		return 0, errs.InvalidField(field, "must not be negative")
	case v == 0:
		return def, nil
	case v > max:
		return max, nil
	}
	return v, nil
}

// ValidateNewMysis checks a mysis to create: its name and its configuration.
func ValidateNewMysis(m NewMysis) error {
	if err := ValidateName("name", m.Name); err != nil {
		return err
	}
	return ValidateConfig(m)
}

// ValidateName checks a mysis name against the one rule every service shares (libs/names).
func ValidateName(field, name string) error {
	return names.Check(field, name)
}

// ValidateConfig checks a mysis's configuration (m's fields but the name) as a whole: on create and on every update,
// after the patch is applied.
func ValidateConfig(m NewMysis) error {
	if err := CheckProvider(m.Provider); err != nil {
		return err
	}
	if err := CheckText("model", m.Model, MaxShortFieldBytes); err != nil {
		return err
	}
	if math.IsNaN(m.Temperature) || m.Temperature < 0 || m.Temperature > MaxTemperature {
		return errs.InvalidField("temperature", "must be between 0 and 2")
	}
	if !slices.Contains(SpaceMoltEndpoints, m.SpaceMoltEndpoint) {
		return errs.InvalidField("spacemolt_endpoint", "must be v1 (the flat tools at /mcp), v2 (the action tools at /mcp/v2) or empty for the swarm's endpoint; got %q", text.Clip(m.SpaceMoltEndpoint, 40, "…"))
	}
	// A prompt the composer cannot use would only show up later as a mysis stuck errored: refuse it here.
	if strings.TrimSpace(m.SystemPrompt) == "" {
		return errs.InvalidField("system_prompt", "required: a mysis without a system prompt cannot be composed")
	}
	if len(m.SystemPrompt) > MaxSystemPromptBytes {
		return errs.InvalidField("system_prompt", "too long: %d bytes, at most %d (about 4,000 tokens) so that the model's context budget keeps room for the conversation", len(m.SystemPrompt), MaxSystemPromptBytes)
	}
	return CheckText("system_prompt", m.SystemPrompt, MaxSystemPromptBytes)
}

// CheckProvider is memory's whole rule for a provider name: an identifier of 1–MaxProviderBytes lower-case letters,
// digits, '_', '-' or '.', starting with a letter or digit. Whether the runner knows it is the runner's question.
func CheckProvider(p string) error {
	if p == "" {
		return errs.InvalidField("provider", "required")
	}
	if len(p) > MaxProviderBytes {
		return errs.InvalidField("provider", "too long: %d bytes, at most %d", len(p), MaxProviderBytes)
	}
	for i, r := range p {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || i > 0 && (r == '_' || r == '-' || r == '.')
		if !ok {
			return errs.InvalidField("provider", "%q is not a provider name: lower-case letters, digits, '_', '-' or '.', starting with a letter or digit", text.Clip(p, MaxProviderBytes, "…"))
		}
	}
	return nil
}

// ValidateStateChange checks a lifecycle transition.
func ValidateStateChange(c StateChange) error {
	if !c.State.Valid() {
		return errs.InvalidField("state", "required")
	}
	if c.Expected != StateAny && !c.Expected.Valid() {
		return errs.InvalidField("expected_state", "unknown state")
	}
	if c.EncouragementCount != nil && *c.EncouragementCount < 0 {
		return errs.InvalidField("encouragement_count", "must not be negative")
	}
	return CheckText("reason", c.Reason, MaxReasonBytes)
}

// ValidateNewMemories checks a batch to append: size, each memory, and idempotency keys unique within the batch.
func ValidateNewMemories(ms []NewMemory) error {
	if len(ms) == 0 {
		return errs.InvalidField("memories", "at least one memory is required")
	}
	if len(ms) > MaxBatch {
		return errs.InvalidField("memories", "at most %d memories per call, got %d", MaxBatch, len(ms))
	}
	// One limit for the whole request, checked with the field named, well below the gRPC message limit.
	total := 0
	for _, m := range ms {
		total += len(m.Content) + len(m.Reasoning)
		for _, tc := range m.ToolCalls {
			total += len(tc.Arguments)
		}
	}
	if total > chat.MaxRequestTextBytes {
		return errs.InvalidField("memories", "too much text in one call: %d bytes, at most %d; append in smaller batches", total, chat.MaxRequestTextBytes)
	}
	keys := make(map[string]int, len(ms))
	for i, m := range ms {
		p := fmt.Sprintf("memories[%d]", i)
		if err := ValidateNewMemory(p, m); err != nil {
			return err
		}
		if m.IdempotencyKey != "" {
			if j, dup := keys[m.IdempotencyKey]; dup {
				return errs.InvalidField(p+".idempotency_key", "repeats memories[%d].idempotency_key", j)
			}
			keys[m.IdempotencyKey] = i
		}
	}
	return nil
}

// ValidateNewMemory checks one memory; prefix is its path in the request ("memories[3]").
func ValidateNewMemory(prefix string, m NewMemory) error {
	f := func(name string) string { return prefix + "." + name }
	if !m.Role.Valid() {
		return errs.InvalidField(f("role"), "required")
	}
	if !m.Source.Valid() {
		return errs.InvalidField(f("source"), "required")
	}
	// A model's reply is held to MaxReplyBytes; prompts and tool results (cut in the window) to MaxContentBytes.
	contentMax := MaxContentBytes
	if m.Role == RoleAssistant {
		contentMax = MaxReplyBytes
	}
	for _, c := range []struct {
		name, v string
		max     int
	}{
		{"sender_id", m.SenderID, MaxShortFieldBytes},
		{"content", m.Content, contentMax},
		{"reasoning", m.Reasoning, MaxReplyBytes},
		{"tool_call_id", m.ToolCallID, MaxShortFieldBytes},
		{"tool_name", m.ToolName, MaxShortFieldBytes},
		{"idempotency_key", m.IdempotencyKey, MaxShortFieldBytes},
		{"call_arguments_json", m.CallArguments, MaxReplyBytes},
	} {
		if err := CheckText(f(c.name), c.v, c.max); err != nil {
			return err
		}
	}
	if m.Role == RoleTool && m.ToolCallID == "" {
		return errs.InvalidField(f("tool_call_id"), "required for a tool result")
	}
	if m.CallArguments != "" && m.Role != RoleTool {
		return errs.InvalidField(f("call_arguments_json"), "only tool results carry the arguments of their call")
	}
	if len(m.ToolCalls) > 0 && m.Role != RoleAssistant {
		return errs.InvalidField(f("tool_calls"), "only assistant messages carry tool calls")
	}
	if m.LlmCall != nil {
		if m.Role != RoleAssistant {
			return errs.InvalidField(f("llm_call"), "only assistant messages carry an LLM call")
		}
		if m.LlmCall.Discarded {
			return errs.InvalidField(f("llm_call.discarded"), "a call whose reply is stored was not discarded")
		}
		if err := ValidateLlmCall(f("llm_call"), *m.LlmCall); err != nil {
			return err
		}
	}
	if len(m.ToolCalls) > MaxToolCallsPerMsg {
		return errs.InvalidField(f("tool_calls"), "at most %d tool calls per message", MaxToolCallsPerMsg)
	}
	ids := make(map[string]bool, len(m.ToolCalls))
	args := 0
	for j, tc := range m.ToolCalls {
		if err := ValidateToolCall(fmt.Sprintf("%s.tool_calls[%d]", prefix, j), tc); err != nil {
			return err
		}
		if args += len(tc.Arguments); args > MaxReplyBytes {
			return errs.InvalidField(fmt.Sprintf("%s.tool_calls[%d].arguments_json", prefix, j),
				"too long: the calls' arguments add up to %d bytes, at most %d in one message", args, MaxReplyBytes)
		}
		if ids[tc.ID] {
			return errs.InvalidField(fmt.Sprintf("%s.tool_calls[%d].id", prefix, j), "duplicate tool call id %q", text.Clip(tc.ID, 64, "…"))
		}
		ids[tc.ID] = true
	}
	return nil
}

// ValidateToolCall checks one tool call: id and name present, arguments a JSON object text.
func ValidateToolCall(prefix string, tc ToolCall) error {
	if tc.ID == "" {
		return errs.InvalidField(prefix+".id", "required")
	}
	if err := CheckText(prefix+".id", tc.ID, MaxShortFieldBytes); err != nil {
		return err
	}
	if tc.Name == "" {
		return errs.InvalidField(prefix+".name", "required")
	}
	if err := CheckText(prefix+".name", tc.Name, MaxShortFieldBytes); err != nil {
		return err
	}
	if err := CheckText(prefix+".arguments_json", tc.Arguments, MaxReplyBytes); err != nil {
		return err
	}
	if !IsJSONObject(tc.Arguments) {
		return errs.InvalidField(prefix+".arguments_json", "must be a JSON object text such as {} or {\"target\":\"sol\"}")
	}
	return nil
}

// IsJSONObject reports whether s is one valid JSON object (surrounding whitespace allowed).
func IsJSONObject(s string) bool {
	t := strings.TrimLeft(s, " \t\r\n")
	return strings.HasPrefix(t, "{") && json.Valid([]byte(s))
}

// ValidateRange checks a ListMemoriesRange request's bounds (toSeq 0: no upper bound) and returns its limit,
// defaulted and capped.
func ValidateRange(fromSeq, toSeq int64, limit int) (int, error) {
	if fromSeq < 0 {
		return 0, errs.InvalidField("from_seq", "must not be negative")
	}
	if toSeq < 0 {
		return 0, errs.InvalidField("to_seq", "must not be negative")
	}
	if toSeq != 0 && toSeq < fromSeq {
		return 0, errs.InvalidField("to_seq", "must be 0 or at least from_seq")
	}
	return Limit("limit", limit, DefaultRangeLimit, MaxRangeLimit)
}

// ValidateMemoryID checks a memory id (GetMemory): ids start at 1.
func ValidateMemoryID(id int64) error {
	if id <= 0 {
		return errs.InvalidField("memory_id", "required")
	}
	return nil
}

// ValidateQuery checks a search query: non-blank, bounded, storable text.
func ValidateQuery(q string) error {
	if strings.TrimSpace(q) == "" {
		return errs.InvalidField("query", "required")
	}
	return CheckText("query", q, MaxQueryBytes)
}

// ValidateSearch checks a search request — the mysis id when needMysis (returned canonical), the query text — and
// returns its limit, defaulted and capped.
func ValidateSearch(needMysis bool, mysisID, text string, limit int) (string, int, error) {
	var err error
	if needMysis {
		if mysisID, err = ParseID("mysis_id", mysisID); err != nil {
			return "", 0, err
		}
	}
	if err := ValidateQuery(text); err != nil {
		return "", 0, err
	}
	limit, err = Limit("limit", limit, DefaultSearchLimit, MaxSearchLimit)
	return mysisID, limit, err
}

// ValidateBroadcastContent checks the text of a broadcast.
func ValidateBroadcastContent(content string) error {
	if strings.TrimSpace(content) == "" {
		return errs.InvalidField("content", "required")
	}
	return CheckText("content", content, MaxContentBytes)
}

// ValidateSenderID checks a sender: "" (the commander) or a mysis id.
func ValidateSenderID(field, s string) (string, error) {
	if s == "" {
		return "", nil
	}
	return ParseID(field, s)
}

// ParseTargets validates and de-duplicates mysis ids (the targets of a delivery), keeping first-seen order; field
// is their path in the request ("mysis_ids").
func ParseTargets(field string, ids []string, required bool) ([]string, error) {
	if required && len(ids) == 0 {
		return nil, errs.InvalidField(field, "at least one mysis id is required")
	}
	if len(ids) > MaxDeliveryTargets {
		return nil, errs.InvalidField(field, "at most %d targets, got %d", MaxDeliveryTargets, len(ids))
	}
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for i, id := range ids {
		id, err := ParseID(fmt.Sprintf("%s[%d]", field, i), id)
		if err != nil {
			return nil, err
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}

// ValidateAccount checks a login to add to the pool.
func ValidateAccount(a Account) error {
	if a.Username == "" {
		return errs.InvalidField("username", "required")
	}
	if err := CheckText("username", a.Username, MaxShortFieldBytes); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(a.Username); n < MinUsernameRunes || n > MaxUsernameRunes {
		return errs.InvalidField("username", "must be %d–%d characters", MinUsernameRunes, MaxUsernameRunes)
	}
	if strings.TrimSpace(a.Username) != a.Username {
		return errs.InvalidField("username", "must not start or end with spaces")
	}
	if a.Password == "" {
		return errs.InvalidField("password", "required")
	}
	if err := CheckText("password", a.Password, MaxPasswordBytes); err != nil {
		// Never echo any part of a password.
		return errs.InvalidField("password", "must be valid UTF-8 without NUL bytes, at most %d bytes", MaxPasswordBytes)
	}
	return CheckText("empire", a.Empire, MaxShortFieldBytes)
}

// ValidateLlmCalls checks a RecordLlmCalls batch: 1–MaxCallsPerCall calls, each valid, call ids unique within it.
func ValidateLlmCalls(calls []LlmCall) error {
	if len(calls) == 0 {
		return errs.InvalidField("calls", "at least one call is required")
	}
	if len(calls) > MaxCallsPerCall {
		return errs.InvalidField("calls", "at most %d calls per request, got %d", MaxCallsPerCall, len(calls))
	}
	seen := make(map[string]bool, len(calls))
	for i, c := range calls {
		p := "calls[" + strconv.Itoa(i) + "]"
		if err := ValidateLlmCall(p, c); err != nil {
			return err
		}
		if seen[c.CallID] {
			return errs.InvalidField(p+".call_id", "repeats an earlier call_id of this request")
		}
		seen[c.CallID] = true
	}
	return nil
}

// ValidateLlmCall checks one call's accounting; prefix is its path in the request ("memories[0].llm_call").
func ValidateLlmCall(prefix string, c LlmCall) error {
	f := func(name string) string { return prefix + "." + name }
	if _, err := ParseID(f("call_id"), c.CallID); err != nil {
		return err
	}
	if c.Provider == "" {
		return errs.InvalidField(f("provider"), "required")
	}
	for _, t := range []struct {
		name, v string
		max     int
	}{{"provider", c.Provider, MaxShortFieldBytes}, {"model", c.Model, MaxShortFieldBytes}, {"error", c.Error, MaxErrorBytes}} {
		if err := CheckText(f(t.name), t.v, t.max); err != nil {
			return err
		}
	}
	if c.Discarded && c.Error != "" {
		return errs.InvalidField(f("discarded"), "a failed call (error set) has no reply to discard")
	}
	for _, n := range []struct {
		name string
		v    int64
	}{
		{"prompt_tokens", c.PromptTokens}, {"cached_prompt_tokens", c.CachedPromptTokens},
		{"completion_tokens", c.CompletionTokens}, {"reasoning_tokens", c.ReasoningTokens},
		{"composed_tokens", c.ComposedTokens}, {"latency_ms", c.LatencyMS}, {"retries", int64(c.Retries)},
		{"cost_nanos", c.CostNanos},
	} {
		if n.v < 0 {
			return errs.InvalidField(f(n.name), "must not be negative, got %d", n.v)
		}
	}
	return nil
}

// ValidateUsage checks a GetUsage selection — at most MaxUsageMyses mysis ids (returned canonical), to after from
// when both are set — and returns its page size, defaulted and capped.
func ValidateUsage(mysisIDs []string, from, to time.Time, pageSize int) ([]string, int, error) {
	if len(mysisIDs) > MaxUsageMyses {
		return nil, 0, errs.InvalidField("mysis_ids", "at most %d myses, got %d", MaxUsageMyses, len(mysisIDs))
	}
	ids := make([]string, 0, len(mysisIDs))
	for i, id := range mysisIDs {
		id, err := ParseID("mysis_ids["+strconv.Itoa(i)+"]", id)
		if err != nil {
			return nil, 0, err
		}
		ids = append(ids, id)
	}
	if !from.IsZero() && !to.IsZero() && !to.After(from) {
		return nil, 0, errs.InvalidField("to", "must be after from")
	}
	size, err := Limit("page_size", pageSize, DefaultPageSize, MaxPageSize)
	return ids, size, err
}

// MaxTop is the most myses a top-by-cost usage query returns.
const MaxTop = 100

// ValidateTop checks a top-by-cost usage query (top 0: none): 1…MaxTop, myses only (byMysis), one page (no page
// size, not a later page: paged).
func ValidateTop(top int, byMysis bool, pageSize int, paged bool) error {
	if top == 0 {
		return nil
	}
	switch {
	case top < 0 || top > MaxTop:
		return errs.InvalidField("top", "must be between 1 and %d, got %d", MaxTop, top)
	case !byMysis:
		return errs.InvalidField("top", "only ranks myses: set group_by to mysis")
	case pageSize != 0:
		return errs.InvalidField("page_size", "a top-by-cost query has one page of top rows: leave page_size unset")
	case paged:
		return errs.InvalidField("page_token", "a top-by-cost query has one page")
	}
	return nil
}

// ValidateSpendLimits checks a mysis's limits: known window and unit, amount not negative, one per pair.
func ValidateSpendLimits(ls []SpendLimit) error {
	seen := map[[2]int16]bool{}
	for i, l := range ls {
		p := func(name string) string { return "limits[" + strconv.Itoa(i) + "]." + name }
		if l.Window < WindowHour || l.Window > WindowTotal {
			return errs.InvalidField(p("window"), "required: hour, day or total")
		}
		if l.Unit < UnitTokens || l.Unit > UnitCostNanos {
			return errs.InvalidField(p("unit"), "required: tokens or cost")
		}
		if l.Amount < 0 {
			return errs.InvalidField(p("amount"), "must not be negative, got %d", l.Amount)
		}
		k := [2]int16{int16(l.Window), int16(l.Unit)}
		if seen[k] {
			return errs.InvalidField(p("window"), "a limit for this window and unit is already in the list")
		}
		seen[k] = true
	}
	return nil
}
