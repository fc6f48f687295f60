package web

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/present"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
)

// Commander actions at swarm scale: the create form makes one mysis or N from a name pattern, and the swarm page's
// selection starts, stops, messages or configures many at once. Each mysis is one call of the same admin API the
// single actions use, a few at a time; the outcome is one sentence that counts what was done and names what was not.

const (
	// maxCreate bounds one create form's count.
	maxCreate = 500
	// maxBulk bounds one selection (ten pages of the swarm table).
	maxBulk = 1000
	// bulkParallel is how many calls a bulk action has in flight.
	bulkParallel = 8
	// shownFailures is how many failed myses the outcome names; the rest are counted.
	shownFailures = 3
)

// numbered expands a name pattern into n free names: "{n}" is replaced by 1, 2, 3 …, and a pattern without it gets
// "-1", "-2" … appended. Numbers whose name is taken are skipped, so "miner" twice with a count of 3 makes
// miner-1 … miner-6.
func numbered(pattern string, n int, taken map[string]bool) []string {
	if !strings.Contains(pattern, "{n}") {
		pattern += "-{n}"
	}
	var out []string
	for i := 1; len(out) < n; i++ {
		name := strings.ReplaceAll(pattern, "{n}", strconv.Itoa(i))
		if !taken[name] {
			out = append(out, name)
		}
	}
	return out
}

// eachMysis runs fn for every name, bulkParallel at a time, and returns the names it failed for with their errors,
// in the names' order.
func eachMysis(ctx context.Context, names []string, fn func(ctx context.Context, name string) error) (failed []string, errs map[string]error) {
	var mu sync.Mutex
	errs = map[string]error{}
	sem := make(chan struct{}, bulkParallel)
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(ctx, name); err != nil {
				mu.Lock()
				errs[name] = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, name := range names {
		if errs[name] != nil {
			failed = append(failed, name)
		}
	}
	return failed, errs
}

// outcome is a bulk action's sentence: "stopped 12 myses", or "stopped 10 of 12 myses; not trader-3: …" as an
// error (the page shows it as a failure) naming the first few that failed with the CLI's sentence for each.
func (s *Server) outcome(verb string, names, failed []string, errs map[string]error, service string) (string, error) {
	plural := func(n int) string {
		if n == 1 {
			return "mysis"
		}
		return "myses"
	}
	if len(failed) == 0 {
		return fmt.Sprintf("%s %d %s", verb, len(names), plural(len(names))), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d of %d %s", verb, len(names)-len(failed), len(names), plural(len(names)))
	for i, name := range failed {
		if i == shownFailures {
			fmt.Fprintf(&b, "; and %d more", len(failed)-shownFailures)
			break
		}
		fmt.Fprintf(&b, "; not %s: %s", present.Safe(name), s.explain(errs[name], present.Subject{Mysis: name, Service: service}))
	}
	return "", present.Sentencef("%s", b.String())
}

// create makes one mysis, or count myses named from the name as a pattern (numbered), with the CLI's options:
// provider, model, temperature, system prompt, endpoint, and started unless "idle" is ticked.
func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimSpace(r.PostFormValue("name"))
	if name == "" {
		s.refuseInput(w, r, "/", "nothing created: a mysis needs a name")
		return
	}
	count := 1
	if v := strings.TrimSpace(r.PostFormValue("count")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxCreate {
			s.refuseInput(w, r, "/", fmt.Sprintf("nothing created: the count must be a whole number from 1 to %d, not %q", maxCreate, v))
			return
		}
		count = n
	}
	var temperature *float64
	if v := strings.TrimSpace(r.PostFormValue("temperature")); v != "" {
		t, err := strconv.ParseFloat(v, 64)
		if err != nil {
			s.refuseInput(w, r, "/", present.BadValue("temperature", v, "a number").Error())
			return
		}
		temperature = &t
	}
	start, state := r.PostFormValue("idle") == "", "running"
	if !start {
		state = "idle"
	}
	reqFor := func(name string) *runnerv1.CreateMysisRequest {
		return &runnerv1.CreateMysisRequest{Name: name, Provider: strings.TrimSpace(r.PostFormValue("provider")),
			Model: strings.TrimSpace(r.PostFormValue("model")), SystemPrompt: strings.TrimSpace(r.PostFormValue("system_prompt")),
			SpacemoltEndpoint: strings.TrimSpace(r.PostFormValue("endpoint")), Temperature: temperature, Start: start}
	}
	if count == 1 && !strings.Contains(name, "{n}") {
		s.do(w, r, "/", present.Subject{Mysis: name, Create: true, Service: "runner"}, func(ctx context.Context) (string, error) {
			st, err := s.b.Create(ctx, reqFor(name))
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("created %s (%s/%s), %s", name, st.GetMysis().GetProvider(), st.GetMysis().GetModel(), state), nil
		})
		return
	}
	s.do(w, r, "/", present.Subject{Service: "runner"}, func(ctx context.Context) (string, error) {
		list, err := s.b.List(ctx)
		if err != nil {
			return "", err
		}
		taken := map[string]bool{}
		for _, st := range list {
			taken[st.GetMysis().GetName()] = true
		}
		names := numbered(name, count, taken)
		failed, errs := eachMysis(ctx, names, func(ctx context.Context, name string) error {
			_, err := s.b.Create(ctx, reqFor(name))
			return err
		})
		text, err := s.outcome("created", names, failed, errs, "runner")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s, %s: %s … %s", text, state, names[0], names[len(names)-1]), nil
	})
}

// bulk applies one action to the selected myses (the "mysis" values): start, stop, message (text) or configure
// (the provider, model and temperature given; empty fields keep each mysis's own).
func (s *Server) bulk(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	var names []string
	for _, n := range r.PostForm["mysis"] {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		s.refuseInput(w, r, "/", "nothing done: select myses first (the boxes in the table's first column)")
		return
	}
	if len(names) > maxBulk {
		s.refuseInput(w, r, "/", fmt.Sprintf("nothing done: %d myses selected, at most %d at once", len(names), maxBulk))
		return
	}
	var (
		verb, service = "", "runner"
		fn            func(ctx context.Context, name string) error
	)
	switch r.PostFormValue("action") {
	case "start":
		verb, fn = "started", s.b.Start
	case "stop":
		verb, fn = "stopped", s.b.Stop
	case "message":
		text := strings.TrimSpace(r.PostFormValue("text"))
		if text == "" {
			s.refuseInput(w, r, "/", "nothing sent: the message was empty")
			return
		}
		verb, service = "sent to", "bus"
		fn = func(ctx context.Context, name string) error { return s.b.Send(ctx, name, text) }
	case "configure":
		var provider, model *string
		var temperature *float64
		if v := strings.TrimSpace(r.PostFormValue("provider")); v != "" {
			provider = &v
		}
		if v := strings.TrimSpace(r.PostFormValue("model")); v != "" {
			model = &v
		}
		if v := strings.TrimSpace(r.PostFormValue("temperature")); v != "" {
			t, err := strconv.ParseFloat(v, 64)
			if err != nil {
				s.refuseInput(w, r, "/", present.BadValue("temperature", v, "a number").Error())
				return
			}
			temperature = &t
		}
		if provider == nil && model == nil && temperature == nil {
			s.refuseInput(w, r, "/", "nothing changed: give a provider, a model or a temperature for the selected myses")
			return
		}
		verb = "configured"
		fn = func(ctx context.Context, name string) error {
			_, err := s.b.Configure(ctx, &runnerv1.ConfigureMysisRequest{Mysis: name, Provider: provider, Model: model, Temperature: temperature})
			return err
		}
	default:
		s.refuseInput(w, r, "/", "nothing done: choose start, stop, message or configure for the selected myses")
		return
	}
	s.do(w, r, "/", present.Subject{Service: service}, func(ctx context.Context) (string, error) {
		failed, errs := eachMysis(ctx, names, fn)
		return s.outcome(verb, names, failed, errs, service)
	})
}
