package web

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// loginLimiter counts wrong tokens per client: after max of them a client waits lockout from its last one before
// the console reads another. A right token clears the count.
type loginLimiter struct {
	max     int
	lockout time.Duration
	mu      sync.Mutex
	clients map[string]*attempts
}

type attempts struct {
	wrong int
	last  time.Time
}

// maxClients bounds the table: past it, clients whose lockout has passed are dropped.
const maxClients = 10000

func newLoginLimiter(max int, lockout time.Duration) *loginLimiter {
	return &loginLimiter{max: max, lockout: lockout, clients: map[string]*attempts{}}
}

// wait is how long client must wait before its next attempt is read (0: now).
func (l *loginLimiter) wait(client string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.clients[client]
	if a == nil || a.wrong < l.max {
		return 0
	}
	if d := a.last.Add(l.lockout).Sub(now); d > 0 {
		return d
	}
	return 0
}

func (l *loginLimiter) failed(client string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.clients) >= maxClients {
		for c, a := range l.clients {
			if now.Sub(a.last) >= l.lockout {
				delete(l.clients, c)
			}
		}
	}
	a := l.clients[client]
	if a == nil {
		a = &attempts{}
		l.clients[client] = a
	}
	if a.wrong >= l.max && now.Sub(a.last) >= l.lockout {
		a.wrong = l.max - 1 // out of lockout: one more wrong token locks it again
	}
	a.wrong++
	a.last = now
}

func (l *loginLimiter) succeeded(client string) {
	l.mu.Lock()
	delete(l.clients, client)
	l.mu.Unlock()
}

// clientOf is the address a request came from (the proxy's, behind one: a client cannot choose it).
func clientOf(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}
