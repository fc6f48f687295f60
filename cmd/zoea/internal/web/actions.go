package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/present"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/spend"
)

// back is where an action returns: the form's "back" when it is a path of this console, else def.
func back(r *http.Request, def string) string {
	b := r.PostFormValue("back")
	if u, err := url.Parse(b); err == nil && strings.HasPrefix(b, "/") && !strings.HasPrefix(b, "//") && u.Host == "" && u.Scheme == "" {
		return b
	}
	return def
}

func mysisURL(name string) string { return "/mysis/" + pathSegment(name) }

// do runs one action and returns to the page it came from with its outcome: what happened, or the sentence the CLI
// would print for the same error.
func (s *Server) do(w http.ResponseWriter, r *http.Request, def string, sub present.Subject, fn func(ctx context.Context) (string, error)) {
	ctx, cancel := s.call(r)
	defer cancel()
	text, err := fn(ctx)
	s.hub.forget() // the page after an action lists the swarm as it is now
	if err != nil {
		if isNotFound(err) && sub.Mysis != "" {
			if list, lerr := s.b.List(ctx); lerr == nil {
				for _, st := range list {
					sub.Known = append(sub.Known, st.GetMysis().GetName())
				}
			}
		}
		s.flash(w, r, s.explain(err, sub).Error(), false)
	} else {
		s.flash(w, r, text, true)
	}
	http.Redirect(w, r, back(r, def), http.StatusSeeOther)
}

// refuseInput returns to the page with a sentence about bad input, without calling the swarm.
func (s *Server) refuseInput(w http.ResponseWriter, r *http.Request, def, sentence string) {
	s.flash(w, r, sentence, false)
	http.Redirect(w, r, back(r, def), http.StatusSeeOther)
}

func (s *Server) broadcast(w http.ResponseWriter, r *http.Request) {
	text := strings.TrimSpace(r.PostFormValue("text"))
	if text == "" {
		s.refuseInput(w, r, "/", "nothing broadcast: the text was empty")
		return
	}
	s.do(w, r, "/", present.Subject{Service: "bus"}, func(ctx context.Context) (string, error) {
		n, err := s.b.Broadcast(ctx, text)
		return fmt.Sprintf("broadcast delivered to %d myses", n), err
	})
}

func (s *Server) start(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("mysis")
	s.do(w, r, mysisURL(ref), present.Subject{Mysis: ref, Service: "runner"}, func(ctx context.Context) (string, error) {
		return "started " + ref, s.b.Start(ctx, ref)
	})
}

func (s *Server) stop(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("mysis")
	s.do(w, r, mysisURL(ref), present.Subject{Mysis: ref, Service: "runner"}, func(ctx context.Context) (string, error) {
		return "stopped " + ref, s.b.Stop(ctx, ref)
	})
}

// delete deletes only with the confirmation page's answer; anything else keeps the mysis, as the CLI's question does.
func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("mysis")
	if r.PostFormValue("confirm") != "yes" {
		s.refuseInput(w, r, mysisURL(ref), "not deleted: "+ref+" is kept")
		return
	}
	s.do(w, r, "/", present.Subject{Mysis: ref, Service: "runner"}, func(ctx context.Context) (string, error) {
		return "deleted " + ref, s.b.Delete(ctx, ref)
	})
}

func (s *Server) message(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("mysis")
	text := strings.TrimSpace(r.PostFormValue("text"))
	if text == "" {
		s.refuseInput(w, r, mysisURL(ref), "nothing sent: the message was empty")
		return
	}
	s.do(w, r, mysisURL(ref), present.Subject{Mysis: ref, Service: "bus"}, func(ctx context.Context) (string, error) {
		return "sent to " + ref, s.b.Send(ctx, ref, text)
	})
}

// configure changes the fields whose value differs from the form's "was_" value (what the page showed).
func (s *Server) configure(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("mysis")
	req := &runnerv1.ConfigureMysisRequest{Mysis: ref}
	changed := func(field string) (string, bool) {
		v := r.PostFormValue(field)
		return v, r.Form.Has(field) && v != r.PostFormValue("was_"+field)
	}
	if v, ok := changed("provider"); ok {
		v = strings.TrimSpace(v)
		req.Provider = &v
	}
	if v, ok := changed("model"); ok {
		v = strings.TrimSpace(v)
		req.Model = &v
	}
	if v, ok := changed("temperature"); ok {
		t, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			s.refuseInput(w, r, mysisURL(ref), present.BadValue("temperature", v, "a number").Error())
			return
		}
		req.Temperature = &t
	}
	if v, ok := changed("system_prompt"); ok {
		req.SystemPrompt = &v
	}
	if req.Provider == nil && req.Model == nil && req.Temperature == nil && req.SystemPrompt == nil {
		s.refuseInput(w, r, mysisURL(ref), "nothing changed")
		return
	}
	s.do(w, r, mysisURL(ref), present.Subject{Mysis: ref, Service: "runner"}, func(ctx context.Context) (string, error) {
		st, err := s.b.Configure(ctx, req)
		if err != nil {
			return "", err
		}
		m := st.GetMysis()
		return fmt.Sprintf("configured %s: %s/%s, temperature %g", ref, m.GetProvider(), m.GetModel(), m.GetTemperature()), nil
	})
}

// limits sets a mysis's own spend limits from the CLI's syntax (cost/day=2.00,tokens/hour=200000), or clears them.
func (s *Server) limits(w http.ResponseWriter, r *http.Request) {
	ref := r.PathValue("mysis")
	var ls []*memoryv1.SpendLimit
	text := strings.TrimSpace(r.PostFormValue("limits"))
	if r.PostFormValue("clear") == "" {
		if text == "" {
			s.refuseInput(w, r, mysisURL(ref), "no limits given: write them as unit/window=amount, e.g. cost/day=2.00,tokens/hour=200000 (or tick clear)")
			return
		}
		var err error
		if ls, err = spend.Parse(text); err != nil {
			s.refuseInput(w, r, mysisURL(ref), err.Error())
			return
		}
	}
	s.do(w, r, mysisURL(ref), present.Subject{Mysis: ref, Service: "runner"}, func(ctx context.Context) (string, error) {
		st, err := s.b.SetLimits(ctx, ref, ls)
		if err != nil {
			return "", err
		}
		if len(st.GetSpendLimits()) == 0 {
			return st.GetMysis().GetName() + " has no spend limit", nil
		}
		var d []string
		for _, l := range st.GetSpendLimits() {
			d = append(d, spend.Describe(l))
		}
		return st.GetMysis().GetName() + ": " + strings.Join(d, ", "), nil
	})
}
