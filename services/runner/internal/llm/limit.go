package llm

import "context"

// WithLimit returns a Provider that lets at most n Chat calls of p run at once; further callers queue until a slot
// frees or their context ends. One Ollama box or one API key serves the whole swarm, and a burst of fifty myses
// waking together should queue here rather than time out there. n <= 0 means no limit.
func WithLimit(p Provider, n int) Provider {
	if n <= 0 {
		return p
	}
	return &limited{next: p, slots: make(chan struct{}, n)}
}

type limited struct {
	next  Provider
	slots chan struct{}
}

func (l *limited) Name() string { return l.next.Name() }

func (l *limited) Chat(ctx context.Context, req Request) (Response, error) {
	// Checked first because select picks randomly among ready cases: a cancelled caller must not win a free slot.
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		return Response{}, ctx.Err()
	}
	defer func() { <-l.slots }()
	return l.next.Chat(ctx, req)
}
