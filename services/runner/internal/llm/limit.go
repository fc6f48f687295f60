package llm

import (
	"context"

	"golang.org/x/sync/semaphore"
)

// WithLimit returns a Provider that lets at most n Chat calls of p run at once; further callers queue until a slot
// frees or their context ends. One Ollama box or one API key serves the whole swarm, and a burst of fifty myses
// waking together should queue here rather than time out there. The queue is first-in first-out
// (golang.org/x/sync/semaphore), so a mysis that has waited longest is served first and none starves. n <= 0 means
// no limit.
func WithLimit(p Provider, n int) Provider {
	if n <= 0 {
		return p
	}
	return &limited{next: p, slots: semaphore.NewWeighted(int64(n))}
}

type limited struct {
	next  Provider
	slots *semaphore.Weighted
}

func (l *limited) Name() string { return l.next.Name() }

func (l *limited) Chat(ctx context.Context, req Request) (Response, error) {
	// Checked first: Acquire takes a free slot even for a context that has already ended.
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	if err := l.slots.Acquire(ctx, 1); err != nil {
		return Response{}, err
	}
	defer l.slots.Release(1)
	return l.next.Chat(ctx, req)
}
