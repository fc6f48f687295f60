package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// maxScopeIDs bounds the rows one page may ask to follow (a page shows pageSize).
const maxScopeIDs = 1000

// scopeOf reads what a page follows from its /events query: ?swarm=1&ids=a,b,… (the swarm page: those rows, the
// counts, new and deleted myses), ?mysis=id (a mysis page), nothing (only whether the console is live).
func scopeOf(r *http.Request) scope {
	q := r.URL.Query()
	sc := scope{swarm: q.Get("swarm") != "", mysis: q.Get("mysis"), ids: map[string]bool{}}
	for _, id := range strings.Split(q.Get("ids"), ",") {
		if id != "" && len(sc.ids) < maxScopeIDs {
			sc.ids[id] = true
		}
	}
	return sc
}

// events streams the hub's changes to one page (text/event-stream), only what its scope shows, until the page goes
// away. A page that fell too far behind is told to reload.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // a proxy in front must not hold events back
	w.WriteHeader(http.StatusOK)
	sub := s.hub.subscribe(scopeOf(r))
	defer s.hub.unsubscribe(sub)
	c := sub.c
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
