package web

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/keytable"
	"github.com/zoeaswarm/zoea/cmd/zoea/internal/present"
	memoryv1 "github.com/zoeaswarm/zoea/gen/go/zoea/memory/v1"
	runnerv1 "github.com/zoeaswarm/zoea/gen/go/zoea/runner/v1"
	"github.com/zoeaswarm/zoea/libs/spend"
)

var funcs = template.FuncMap{
	"safe":    present.Safe,
	"oneline": present.OneLine,
	"clip":    func(n int, s string) string { return present.Clip(s, n) },
	"grouped": func(n int64) string { return present.Grouped(n) },
	"usd":     spend.USD,
	"time":    func(t time.Time) string { return t.UTC().Format("15:04:05") },
	"path":    pathSegment,
}

// pathSegment is a name as one segment of a URL path: "/", "?" and "#" escaped, and "." or ".." spelled %2E so no
// browser or proxy resolves it as a step up.
func pathSegment(name string) string {
	if strings.Trim(name, ".") == "" {
		return strings.Repeat("%2E", len(name))
	}
	return url.PathEscape(name)
}

// parsePages parses each page with the layout.
func parsePages() map[string]*template.Template {
	pages := map[string]*template.Template{}
	for _, name := range []string{"login", "refused", "swarm", "mysis", "anatomy", "spend", "help", "delete", "notfound"} {
		pages[name] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
	}
	return pages
}

// layout is what every page's frame shows.
type layout struct {
	Title    string
	CSRF     string
	Flash    string
	FlashOK  bool
	Keys     string // the shared key table as JSON, for the script
	Live     bool
	LiveWhy  string
	LoggedIn bool
	Page     any
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, page string, data any) {
	l := layout{Title: page, Page: data}
	if sess := sessionOf(r); sess != nil {
		l.LoggedIn, l.CSRF = true, sess.csrf
		l.Flash, l.FlashOK = s.takeFlash(w, r)
		l.Live, l.LiveWhy = s.hub.status()
	}
	keys, _ := json.Marshal(keytable.Browser())
	l.Keys = string(keys)
	var buf bytes.Buffer
	if err := s.pages[page].Execute(&buf, l); err != nil {
		s.opts.Log.Error("render", "page", page, "err", err)
		http.Error(w, "the page could not be drawn: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

func (s *Server) call(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.opts.CallTimeout)
}

// failed shows a call's error as the CLI words it.
func (s *Server) failed(w http.ResponseWriter, r *http.Request, err error, sub present.Subject) {
	code := http.StatusBadGateway
	if isNotFound(err) {
		code = http.StatusNotFound
		if sub.Mysis != "" {
			ctx, cancel := s.call(r)
			if list, lerr := s.b.List(ctx); lerr == nil {
				for _, st := range list {
					sub.Known = append(sub.Known, st.GetMysis().GetName())
				}
			}
			cancel()
		}
	}
	s.render(w, r, code, "refused", map[string]any{"Why": present.Safe(s.explain(err, sub).Error())})
}

// explain is the CLI's sentence for a failed call, naming the address of the service it went to.
func (s *Server) explain(err error, sub present.Subject) error {
	if sub.Addr == "" {
		sub.Addr = s.opts.Addrs[sub.Service]
	}
	return present.Explain(err, sub)
}

// sortNames are the swarm table's orders; o (or the link) cycles through them.
var sortNames = []string{"name", "state", "turns", "credits", "tokens", "cost", "last action"}

func sortRows(rows []row, by string) {
	slices.SortFunc(rows, func(a, b row) int {
		var c int
		switch by {
		case "state":
			c = cmp.Compare(a.State, b.State)
		case "turns":
			c = cmp.Compare(b.Turns, a.Turns)
		case "credits":
			c = cmp.Compare(b.credits, a.credits)
		case "tokens":
			c = cmp.Compare(b.tokens, a.tokens)
		case "cost":
			c = cmp.Compare(b.costNanos, a.costNanos)
		case "last action":
			c = cmp.Compare(a.Action, b.Action)
		}
		return cmp.Or(c, cmp.Compare(a.Name, b.Name))
	})
}

func matches(r row, filter string) bool {
	if filter == "" {
		return true
	}
	hay := strings.ToLower(strings.Join([]string{r.Name, r.State, r.Provider, r.Model, r.Action, r.LastError, r.Owner}, " "))
	return strings.Contains(hay, strings.ToLower(filter))
}

func (s *Server) swarmPage(w http.ResponseWriter, r *http.Request) {
	list, kept := s.hub.swarm()
	if !kept {
		ctx, cancel := s.call(r)
		defer cancel()
		start := s.opts.Now()
		var err error
		if list, err = s.b.List(ctx); err != nil {
			s.failed(w, r, err, present.Subject{Service: "runner"})
			return
		}
		s.hub.keep(list, start)
	}
	by := r.URL.Query().Get("sort")
	if !slices.Contains(sortNames, by) {
		by = "name"
	}
	filter := r.URL.Query().Get("q")
	rows := make([]row, 0, len(list))
	counts := map[string]int{}
	for _, st := range list {
		rw := rowOf(st)
		counts[rw.State]++
		if matches(rw, filter) {
			rows = append(rows, rw)
		}
	}
	sortRows(rows, by)
	next := sortNames[(slices.Index(sortNames, by)+1)%len(sortNames)]
	// One page of rows: the table a browser keeps live stays small however large the swarm (issue 46).
	pages := max(1, (len(rows)+pageSize-1)/pageSize)
	p, _ := strconv.Atoi(r.URL.Query().Get("p"))
	p = min(max(p, 1), pages)
	shown := rows[(p-1)*pageSize : min(p*pageSize, len(rows))]
	pageLink := func(n int) string {
		v := url.Values{"sort": {by}}
		if filter != "" {
			v.Set("q", filter)
		}
		if n > 1 {
			v.Set("p", strconv.Itoa(n))
		}
		return "/?" + v.Encode()
	}
	var prev, nextPage string
	if p > 1 {
		prev = pageLink(p - 1)
	}
	if p < pages {
		nextPage = pageLink(p + 1)
	}
	s.render(w, r, http.StatusOK, "swarm", map[string]any{
		"Rows": shown, "Total": len(list), "Matching": len(rows), "Sort": by, "Sorts": sortNames, "Next": next, "Filter": filter,
		"States": stateCounts(counts), "Page": p, "Pages": pages, "Prev": prev, "NextPage": nextPage,
		"First": (p-1)*pageSize + 1, "Last": (p-1)*pageSize + len(shown),
		// A mysis created elsewhere is added to this page live when it has room and shows the swarm unfiltered.
		"Room": filter == "" && p == pages && len(shown) < pageSize,
	})
}

// pageSize is how many rows the swarm page shows (and follows live) at once.
const pageSize = 100

func (s *Server) helpPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "help", map[string]any{"Table": keytable.Table})
}

// turnGroup is one turn of a mysis's history.
type turnGroup struct {
	Turn     int64
	Memories []memoryView
}

type memoryView struct {
	Seq       int64
	Label     string
	At        string
	Content   string
	Reasoning string
	Calls     []callView
}

type callView struct{ Name, Args string }

func viewMemory(m *memoryv1.Memory) memoryView {
	v := memoryView{Seq: m.GetSeq(), Label: present.Safe(present.RowLabel(m)), Content: present.Safe(m.GetContent()),
		Reasoning: present.Safe(m.GetReasoning())}
	if m.GetCreatedAt() != nil {
		v.At = m.GetCreatedAt().AsTime().UTC().Format(time.DateTime)
	}
	for _, c := range m.GetToolCalls() {
		v.Calls = append(v.Calls, callView{Name: present.Safe(c.GetName()), Args: present.Safe(c.GetArgumentsJson())})
	}
	return v
}

// shipView is the mysis page's Ship section: what the game's newest get_status said, written for a person.
type shipView struct {
	Where, Class, Hull, Shield, Fuel, Cargo, Earned, PerDollar, Seen string
	Items                                                            []string
}

// shipOf is the Ship section, nil before the mysis's first get_status.
func shipOf(st *runnerv1.MysisStatus) *shipView {
	sh := st.GetShip()
	if sh.GetSystem() == "" {
		return nil
	}
	frac := func(v, max int64) string { return fmt.Sprintf("%d/%d", v, max) }
	v := &shipView{Where: present.Where(st), Class: present.Safe(sh.GetClass()), Hull: frac(sh.GetHull(), sh.GetMaxHull()),
		Shield: frac(sh.GetShield(), sh.GetMaxShield()), Fuel: frac(sh.GetFuel(), sh.GetMaxFuel()), Cargo: present.Cargo(st),
		Earned: "?", PerDollar: present.EarnedPerDollar(st), Seen: sh.GetSeenAt().AsTime().UTC().Format(time.DateTime)}
	if sh.GetCreditsEarned() >= 0 {
		v.Earned = present.Grouped(sh.GetCreditsEarned())
	}
	for _, c := range sh.GetCargo() {
		v.Items = append(v.Items, fmt.Sprintf("%s × %s", present.Safe(c.GetItemId()), present.Grouped(c.GetQuantity())))
	}
	return v
}

func (s *Server) mysisPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.call(r)
	defer cancel()
	st, ok := s.pathMysis(ctx, w, r)
	if !ok {
		return
	}
	m := st.GetMysis()
	data := map[string]any{"Row": rowOf(st), "Mysis": m, "Name": present.Safe(m.GetName()), "Ref": m.GetName(),
		"FullError": present.Safe(present.LastError(st)), "Events": s.hub.timeline(m.GetId()),
		"Temperature": strconv.FormatFloat(m.GetTemperature(), 'g', -1, 64), "Owner": present.Safe(st.GetOwner()),
		"Turns": st.GetTurns(), "Query": "", "Order": ""}
	var limits []string
	for _, l := range st.GetSpendLimits() {
		limits = append(limits, spend.Describe(l))
	}
	data["Limits"] = limits
	data["Ship"] = shipOf(st)
	u := st.GetUsage()
	data["Usage"] = map[string]string{"calls": present.Grouped(u.GetCalls()), "prompt": present.Grouped(u.GetPromptTokens()),
		"cached": present.Grouped(u.GetCachedPromptTokens()), "completion": present.Grouped(u.GetCompletionTokens()),
		"cost": spend.USD(u.GetCostNanos())}
	if q := strings.TrimSpace(r.URL.Query().Get("q")); q != "" {
		order := memoryv1.SearchOrder_SEARCH_ORDER_RELEVANCE
		if r.URL.Query().Get("order") == "recency" {
			order = memoryv1.SearchOrder_SEARCH_ORDER_RECENCY
		}
		data["Query"], data["Order"] = q, r.URL.Query().Get("order")
		resp, err := s.b.Search(ctx, m.GetId(), q, order, 30)
		if err != nil {
			data["SearchErr"] = present.Safe(s.explain(err, present.Subject{Service: "memory", Mysis: m.GetName()}).Error())
		} else {
			var hits []map[string]any
			for _, h := range resp.GetHits() {
				hits = append(hits, map[string]any{"Memory": viewMemory(h.GetMemory()), "Rank": fmt.Sprintf("%.3f", h.GetRank()),
					"Snippet": present.OneLine(h.GetSnippet())})
			}
			matched := fmt.Sprint(resp.GetMatches())
			if resp.GetMatchesEstimated() {
				matched = "at least " + matched
			}
			data["Hits"], data["Matched"], data["Note"] = hits, matched, resp.GetNote()
		}
	}
	mems, err := s.b.History(ctx, m.GetId(), 60)
	if err != nil {
		data["HistoryErr"] = present.Safe(s.explain(err, present.Subject{Service: "memory"}).Error())
	}
	var turns []turnGroup // newest turn first
	for i := len(mems) - 1; i >= 0; i-- {
		mem := mems[i]
		if len(turns) == 0 || turns[len(turns)-1].Turn != mem.GetTurn() {
			turns = append(turns, turnGroup{Turn: mem.GetTurn()})
		}
		g := &turns[len(turns)-1]
		g.Memories = append([]memoryView{viewMemory(mem)}, g.Memories...)
	}
	data["History"] = turns
	s.render(w, r, http.StatusOK, "mysis", data)
}

func (s *Server) deletePage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.call(r)
	defer cancel()
	st, ok := s.pathMysis(ctx, w, r)
	if !ok {
		return
	}
	m := st.GetMysis()
	s.render(w, r, http.StatusOK, "delete", map[string]any{"Name": present.Safe(m.GetName()), "Ref": m.GetName(),
		"State": present.State(m.GetState()), "Turn": m.GetCurrentTurn(), "Memories": m.GetLastSeq()})
}

// pathMysis reads the mysis the URL names ({mysis}); when it cannot, it has answered the request with the reason.
func (s *Server) pathMysis(ctx context.Context, w http.ResponseWriter, r *http.Request) (*runnerv1.MysisStatus, bool) {
	ref := r.PathValue("mysis")
	st, err := s.b.Get(ctx, ref)
	if err != nil {
		s.failed(w, r, err, present.Subject{Mysis: ref, Service: "runner"})
		return nil, false
	}
	return st, true
}
