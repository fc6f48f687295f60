package redact

import (
	"context"
	"encoding/json"
	"log/slog"
)

// Handler is a slog.Handler that passes every record's message and attribute values through its Redactor before
// the next handler writes them: whatever a caller logs (an error that quotes a provider's body, a URL with its
// query, a panic value), the line written holds no secret.
type Handler struct {
	next slog.Handler
	r    *Redactor
}

// Handler wraps next so that everything logged through it is redacted by r.
func (r *Redactor) Handler(next slog.Handler) *Handler {
	return &Handler{next: next, r: r}
}

// Of returns the Redactor of a redacting handler (one made by Redactor.Handler), or nil: a process's wiring finds
// the redactor its logger was built with, to teach it the values it learns later.
func Of(h slog.Handler) *Redactor {
	if rh, ok := h.(*Handler); ok {
		return rh.r
	}
	return nil
}

// Enabled implements slog.Handler.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// Handle implements slog.Handler.
func (h *Handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.attr(a)
	}
	return &Handler{next: h.next.WithAttrs(red), r: h.r}
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), r: h.r}
}

// attr redacts one attribute's value. Strings and errors are redacted as text; other values that the next handler
// would write as JSON (a struct, a map) are marshalled once to see whether they hold a secret, and replaced by
// their redacted JSON when they do.
func (h *Handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		s := v.String()
		if r := h.r.String(s); r != s {
			return slog.String(a.Key, r)
		}
		return slog.Attr{Key: a.Key, Value: v}
	case slog.KindGroup:
		g := v.Group()
		red := make([]slog.Attr, len(g))
		for i, ga := range g {
			red[i] = h.attr(ga)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(red...)}
	case slog.KindAny:
	default:
		return slog.Attr{Key: a.Key, Value: v} // numbers, times, durations, booleans
	}
	switch x := v.Any().(type) {
	case error:
		// Handlers write an error as its text; redacted, it is written the same way.
		return slog.String(a.Key, h.r.String(x.Error()))
	case []byte:
		return slog.String(a.Key, h.r.String(string(x)))
	case []string:
		var red []string
		for i, s := range x {
			if r := h.r.String(s); r != s {
				if red == nil {
					red = append([]string(nil), x...)
				}
				red[i] = r
			}
		}
		if red != nil {
			return slog.Any(a.Key, red)
		}
		return slog.Attr{Key: a.Key, Value: v}
	case nil:
		return slog.Attr{Key: a.Key, Value: v}
	}
	b, err := json.Marshal(v.Any())
	if err != nil {
		return slog.Attr{Key: a.Key, Value: v}
	}
	if r := h.r.String(string(b)); r != string(b) {
		if json.Valid([]byte(r)) {
			return slog.Any(a.Key, json.RawMessage(r))
		}
		return slog.String(a.Key, r)
	}
	return slog.Attr{Key: a.Key, Value: v}
}
