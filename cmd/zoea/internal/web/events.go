package web

import (
	"encoding/json"
	"net/http"
	"time"
)

// events streams the hub's events to one page (text/event-stream) until the page goes away. A page that fell too
// far behind is told to reload.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // a proxy in front must not hold events back
	w.WriteHeader(http.StatusOK)
	c := s.hub.subscribe()
	defer s.hub.unsubscribe(c)
	live, why := s.hub.status()
	w.Write([]byte("retry: 2000\n\n"))
	if !live {
		w.Write([]byte("event: live\ndata: {\"live\":false,\"why\":" + quote(why) + "}\n\n"))
	}
	if err := rc.Flush(); err != nil {
		return
	}
	keep := time.NewTicker(25 * time.Second)
	defer keep.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case msg, ok := <-c:
			if !ok {
				w.Write([]byte("event: reload\ndata: {}\n\n"))
				rc.Flush()
				return
			}
			if _, err := w.Write(msg); err != nil {
				return
			}
			// Send what else is queued before flushing: a burst is one write to the network.
			for drained := false; !drained; {
				select {
				case more, ok := <-c:
					if !ok {
						w.Write([]byte("event: reload\ndata: {}\n\n"))
						rc.Flush()
						return
					}
					w.Write(more)
				default:
					drained = true
				}
			}
			if err := rc.Flush(); err != nil {
				return
			}
		case <-keep.C:
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
				return
			}
			rc.Flush()
		}
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
