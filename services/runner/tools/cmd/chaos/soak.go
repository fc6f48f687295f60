package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zoeaswarm/zoea/libs/server"
)

// The soak (-soak, `make soak`): the same stack and load as the fault suite, no fault at all, for -duration, with
// every process's footprint, every service's bounded caches (libs/server.CachesPath on its debug port) and the
// Postgres connections by application_name sampled every -sample-every. At the end, besides every check of the
// fault suite, it fails when a cache ever held more than its bound, when the memory service held more connections
// than its pool allows, or when a Go process grew in the second half of the run (when its caches have long filled)
// by more than leakSlack: RSS, goroutines or open files.

// sample is one reading of the stack.
type sample struct {
	at     time.Duration // since the load began
	res    map[string]usage
	caches map[string][]server.CacheFill // by process
	pg     map[string]int                // backends by application_name ("" for Postgres' own)
	pgErr  error
}

// leak is how much a process may grow between the half-way sample and the last one before the soak calls it a
// leak: a Go heap breathes with the GC (a few MiB either way on these services), so a fixed small slack would flake;
// a leak of a turn's worth per turn is far beyond it in half an hour.
type leak struct {
	rssFrac     float64 // of the half-way RSS
	rssMinKiB   int     // at least this much
	goroutines  int     // more than this many, and more than half as many again
	openFiles   int
	description string
}

var leakSlack = leak{rssFrac: 0.25, rssMinKiB: 24 << 10, goroutines: 50, openFiles: 50,
	description: "RSS by more than 25% and 24 MiB, goroutines by more than half and 50, open files by more than 50"}

// soak samples the stack every -sample-every until -duration has passed since the load began.
func (c *chaosRun) soak(ctx context.Context) {
	tick := time.NewTicker(c.o.sampleEvery)
	defer tick.Stop()
	for {
		s := c.sample(ctx)
		c.samples = append(c.samples, s)
		c.log.Info("soak sample", "at", s.at.Round(time.Second), "summary", s.summary())
		if s.at >= c.o.duration || ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (c *chaosRun) sample(ctx context.Context) sample {
	s := sample{at: time.Since(c.began), res: c.e.resources(), caches: map[string][]server.CacheFill{}}
	for name, p := range c.e.procs {
		if p.debugAddr == "" || !p.running() {
			continue
		}
		if fills, ok := cacheFills(ctx, p.debugAddr); ok && len(fills) > 0 {
			s.caches[name] = fills
		}
	}
	s.pg, s.pgErr = pgConnections(ctx, c.e.dbURL)
	return s
}

// summary is one log line: each Go service's RSS and the caches' fill.
func (s sample) summary() string {
	var parts []string
	for _, name := range sortedKeys(s.res) {
		if u := s.res[name]; u.ok {
			parts = append(parts, fmt.Sprintf("%s %.0fMiB", name, float64(u.rssKiB)/1024))
		}
	}
	for _, name := range sortedKeys(s.caches) {
		for _, f := range s.caches[name] {
			parts = append(parts, fmt.Sprintf("%s %d/%d", f.Name, f.Size, f.Bound))
		}
	}
	return strings.Join(parts, ", ")
}

// cacheFills reads a service's published caches; ok is false for a process that serves none (a NATS node).
func cacheFills(ctx context.Context, addr string) ([]server.CacheFill, bool) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+server.CachesPath, nil)
	if err != nil {
		return nil, false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	var fills []server.CacheFill
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&fills) != nil {
		return nil, false
	}
	return fills, true
}

// pgConnections counts the client backends of the run's database server by application_name.
func pgConnections(ctx context.Context, url string) (map[string]int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT application_name, count(*) FROM pg_stat_activity
		WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() GROUP BY 1`)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for rows.Next() {
		var app string
		var n int
		if err := rows.Scan(&app, &n); err != nil {
			return nil, err
		}
		out[app] = n
	}
	return out, rows.Err()
}

// reportSoak writes the samples (each process's RSS, goroutines and open files; each cache's fill; the Postgres
// connections) and the verdicts: a cache over its bound, the memory service over its pool, a process that grew in
// the second half.
func (c *chaosRun) reportSoak() {
	if len(c.samples) == 0 {
		c.failf("the soak took no sample")
		return
	}
	first, mid, last := c.samples[0], c.samples[len(c.samples)/2], c.samples[len(c.samples)-1]
	fmt.Fprintf(&c.report, "\n== soak: %s of load without faults, %d samples every %s; %d myses (%d autopilot, %d on the slow model), %d writers, a broadcast every %s\n",
		last.at.Round(time.Second), len(c.samples), c.o.sampleEvery, c.o.swarm+c.o.slow, c.o.swarm, c.o.slow, c.o.writers, c.o.broadcastEvery)
	procs := sortedKeys(last.res)
	fmt.Fprintf(&c.report, "RSS MiB at each sample (%s)\n", strings.Join(procs, " | "))
	for _, s := range c.samples {
		var cols []string
		for _, p := range procs {
			cols = append(cols, fmt.Sprintf("%.1f", float64(s.res[p].rssKiB)/1024))
		}
		fmt.Fprintf(&c.report, "%8s  %s\n", s.at.Round(time.Second), strings.Join(cols, " | "))
	}
	fmt.Fprintf(&c.report, "per process: start → half-way (%s) → end: RSS MiB / goroutines / open files / threads; second-half RSS slope\n", mid.at.Round(time.Second))
	for _, p := range procs {
		a, m, z := first.res[p], mid.res[p], last.res[p]
		fmt.Fprintf(&c.report, "%-16s %s → %s → %s; %+.1f MiB/h\n", p, footprint(a), footprint(m), footprint(z), rssSlope(c.samples[len(c.samples)/2:], p))
		if !m.ok || !z.ok {
			c.failf("soak: %s was not running at the half-way or the last sample", p)
			continue
		}
		if grow := z.rssKiB - m.rssKiB; grow > leakSlack.rssMinKiB && float64(grow) > leakSlack.rssFrac*float64(m.rssKiB) {
			c.failf("soak: %s RSS grew %.1f → %.1f MiB in the second half", p, float64(m.rssKiB)/1024, float64(z.rssKiB)/1024)
		}
		if m.goroutines > 0 && z.goroutines > m.goroutines+max(leakSlack.goroutines, m.goroutines/2) {
			c.failf("soak: %s goroutines grew %d → %d in the second half", p, m.goroutines, z.goroutines)
		}
		if z.fds > m.fds+leakSlack.openFiles {
			c.failf("soak: %s open files grew %d → %d in the second half", p, m.fds, z.fds)
		}
	}
	fmt.Fprintf(&c.report, "(a leak is growth from the half-way sample to the last of %s)\n", leakSlack.description)
	// Every mysis still plays in the last quarter: a plateau of a stack that stopped working proves nothing.
	lastQuarter := c.began.Add(last.at * 3 / 4)
	worst, slowest, never := progressAfter(c.histories, lastQuarter, c.stopped)
	fmt.Fprintf(&c.report, "== every mysis's first stored model reply in the last quarter (from %s): slowest %s after (%s); none: %d\n",
		(last.at * 3 / 4).Round(time.Second), worst.Round(10*time.Millisecond), c.names[slowest], len(never))
	for _, id := range never {
		c.failf("soak: %s stored no model reply in the last quarter of the run", c.names[id])
	}
	c.reportCaches()
	c.reportPostgres()
}

// reportCaches writes each cache's fill at the start, the half-way and the end, the first sample at which it held
// at least half its bound (a generational cache holds between half and all of it once full), its range after that,
// and fails any sample over the bound, or a per-mysis cache holding more myses than the run created.
func (c *chaosRun) reportCaches() {
	type series struct {
		proc, unit string
		bound      int64
		sizes      []int64
		at         []time.Duration
	}
	byName := map[string]*series{}
	for _, s := range c.samples {
		for proc, fills := range s.caches {
			for _, f := range fills {
				k := proc + " " + f.Name
				if byName[k] == nil {
					byName[k] = &series{proc: proc, unit: f.Unit, bound: f.Bound}
				}
				byName[k].sizes = append(byName[k].sizes, f.Size)
				byName[k].at = append(byName[k].at, s.at)
				if f.Bound > 0 && f.Size > f.Bound {
					c.failf("soak: %s %s held %d %s at %s, over its bound %d", proc, f.Name, f.Size, f.Unit, s.at.Round(time.Second), f.Bound)
				}
				if all := c.o.swarm + c.o.slow + c.o.writers; f.Bound == 0 && f.Unit == "myses" && f.Size > int64(all) {
					c.failf("soak: %s %s held %d myses at %s; there are %d", proc, f.Name, f.Size, s.at.Round(time.Second), all)
				}
			}
		}
	}
	fmt.Fprintf(&c.report, "== caches (size of bound; \"filled\": first sample at half its bound or more, then its range to the end)\n")
	for _, k := range sortedKeys(byName) {
		s := byName[k]
		bound := "no bound of its own"
		if s.bound > 0 {
			bound = fmt.Sprintf("bound %d", s.bound)
		}
		filled := "never filled"
		for i, n := range s.sizes {
			if s.bound > 0 && 2*n >= s.bound {
				rest := s.sizes[i:]
				filled = fmt.Sprintf("filled at %s, then %d–%d", s.at[i].Round(time.Second), slices.Min(rest), slices.Max(rest))
				break
			}
		}
		if s.bound == 0 {
			filled = fmt.Sprintf("%d–%d over the run", slices.Min(s.sizes), slices.Max(s.sizes))
		}
		fmt.Fprintf(&c.report, "%-44s %s %s: start %d, end %d; %s\n", k, s.unit, bound, s.sizes[0], s.sizes[len(s.sizes)-1], filled)
	}
}

// reportPostgres writes the largest count of backends per application seen, and fails when the memory service ever
// held more than its pool's bound (ZOEA_DB_MAX_CONNS).
func (c *chaosRun) reportPostgres() {
	peak := map[string]int{}
	errs := 0
	for _, s := range c.samples {
		if s.pgErr != nil {
			errs++
			continue
		}
		for app, n := range s.pg {
			peak[app] = max(peak[app], n)
		}
	}
	var parts []string
	for _, app := range sortedKeys(peak) {
		name := app
		if name == "" {
			name = "(unnamed)"
		}
		parts = append(parts, fmt.Sprintf("%s %d", name, peak[app]))
	}
	fmt.Fprintf(&c.report, "== Postgres client connections, peak by application_name: %s (%d samples unreadable)\n", strings.Join(parts, ", "), errs)
	if peak["zoea-memory"] > memoryMaxConns {
		c.failf("soak: the memory service held %d connections; its pool allows %d", peak["zoea-memory"], memoryMaxConns)
	}
	if peak["zoea-memory"] == 0 {
		c.failf("soak: no Postgres connection named zoea-memory was seen")
	}
}

// footprint is "RSS / goroutines / open files / threads".
func footprint(u usage) string {
	if !u.ok {
		return "(not running)"
	}
	g := fmt.Sprint(u.goroutines)
	if u.goroutines < 0 {
		g = "n/a"
	}
	return fmt.Sprintf("%.1f / %s / %d / %d", float64(u.rssKiB)/1024, g, u.fds, u.threads)
}

// rssSlope is the least-squares slope of the process's RSS over the samples, in MiB per hour.
func rssSlope(samples []sample, proc string) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, s := range samples {
		u := s.res[proc]
		if !u.ok {
			continue
		}
		x, y := s.at.Hours(), float64(u.rssKiB)/1024
		n++
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	if d := n*sxx - sx*sx; n >= 2 && d != 0 {
		return (n*sxy - sx*sy) / d
	}
	return 0
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
