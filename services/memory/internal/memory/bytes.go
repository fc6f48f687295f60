package memory

// MaxResponseBytes bounds the text one read of recent memories returns. Rows count alone is no bound: 1000 rows of
// 8 MiB tool results once made a single ListRecentMemories answer hundreds of MB (memory RSS 84 → 531 MB), and a
// window of 50 such rows can never be composed. The newest row is always returned, whatever its size (at most
// MaxContentBytes per field), so a reader always makes progress.
const MaxResponseBytes = 16 << 20

// Bytes is the text size of a memory as the byte bounds count it: content, reasoning and tool arguments.
func (m Memory) Bytes() int {
	n := len(m.Content) + len(m.Reasoning)
	for _, tc := range m.ToolCalls {
		n += len(tc.ID) + len(tc.Name) + len(tc.Arguments)
	}
	return n
}

// KeepNewestWithin returns the newest memories of ms (ordered oldest first) whose sizes add up to at most max
// bytes, and always at least the newest one. Readers that assemble rows themselves (the compose window) use it to
// bound a response the same way ListRecentMemories does in SQL.
func KeepNewestWithin(ms []Memory, max int) []Memory {
	total := 0
	for i := len(ms) - 1; i >= 0; i-- {
		total += ms[i].Bytes()
		if total > max && i < len(ms)-1 {
			return ms[i+1:]
		}
	}
	return ms
}
