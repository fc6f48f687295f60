package llm

import (
	"context"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
)

// order is a fake Provider that records which caller entered, then blocks until released.
type order struct {
	mu      sync.Mutex
	entered []string
	release chan struct{}
}

func (o *order) Name() string { return "order" }

func (o *order) Chat(ctx context.Context, req Request) (Response, error) {
	o.mu.Lock()
	o.entered = append(o.entered, req.Model)
	o.mu.Unlock()
	select {
	case <-o.release:
	case <-ctx.Done():
	}
	return Response{}, nil
}

// Queued callers get the slot in the order they asked for it, so no mysis starves behind later arrivals. The order is
// a documented guarantee of golang.org/x/sync/semaphore; a channel semaphore only happened to behave so.
func TestWithLimitIsFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := &order{release: make(chan struct{})}
		p := WithLimit(o, 1)
		var wg sync.WaitGroup
		call := func(i int) {
			wg.Go(func() {
				if _, err := p.Chat(t.Context(), Request{Model: strconv.Itoa(i)}); err != nil {
					t.Error(err)
				}
			})
			synctest.Wait() // caller i is inside the provider or queued before the next one starts
		}
		for i := range 6 {
			call(i)
		}
		for range 6 {
			o.release <- struct{}{}
			synctest.Wait()
		}
		wg.Wait()
		if want := []string{"0", "1", "2", "3", "4", "5"}; !reflect.DeepEqual(o.entered, want) {
			t.Fatalf("callers entered in order %v, want %v", o.entered, want)
		}
	})
}
