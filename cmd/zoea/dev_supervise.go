package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// A service that exits on its own while the swarm runs (a crash, a kill -9, the OOM killer) is started again, as
// docker compose's restart policy or a Kubernetes Deployment would: the swarm carries on, since every service
// recovers its state from Postgres and NATS and the others retry it meanwhile. A service that keeps dying is not
// restarted for ever: past maxRestarts within restartWindow the launcher stops the swarm and names it.
const (
	maxRestarts   = 3
	restartWindow = 2 * time.Minute
)

// supervisor holds the swarm's services: the current process of each, in start order.
type supervisor struct {
	mu       sync.Mutex
	procs    []*proc
	restarts map[string][]time.Time // recent restart times per service
	stopping bool

	// start starts a service again; its log continues. healthy, when set, waits until it serves.
	start   func(name string) (*proc, error)
	healthy func(ctx context.Context, p *proc) error
	pids    *pidFile
	// notify gets a line per restart (the progress output; the console has the screen, so there it is discarded).
	notify   io.Writer
	logDir   string
	fail     context.CancelCauseFunc // ends the swarm with the reason
	restartC chan string             // receives the name of each service started again (tests); nil: none
}

// add records a service started for the first time.
func (s *supervisor) add(p *proc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.procs = append(s.procs, p)
}

// watch supervises every service until the swarm stops.
func (s *supervisor) watch(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		go s.await(ctx, p)
	}
}

// await waits for p to exit and starts its service again, unless the swarm is stopping or the service has used up
// its restarts.
func (s *supervisor) await(ctx context.Context, p *proc) {
	var err error
	select {
	case err = <-p.done:
	case <-ctx.Done():
		return
	}
	s.mu.Lock()
	if s.stopping || ctx.Err() != nil {
		p.done <- err // stopAll reads it
		s.mu.Unlock()
		return
	}
	log := filepath.Join(s.logDir, p.name+".log")
	now := time.Now()
	recent := slices.DeleteFunc(s.restarts[p.name], func(t time.Time) bool { return now.Sub(t) > restartWindow })
	if len(recent) >= maxRestarts {
		p.done <- err
		s.mu.Unlock()
		s.fail(fmt.Errorf("%s exited unexpectedly (%v), the %s time within %s; see %s", p.name, exitReason(err),
			ordinal(len(recent)+1), restartWindow, log))
		return
	}
	np, serr := s.start(p.name)
	if serr != nil {
		p.done <- err
		s.mu.Unlock()
		s.fail(fmt.Errorf("%s exited unexpectedly (%v) and did not start again: %w; see %s", p.name, exitReason(err), serr, log))
		return
	}
	s.procs[slices.Index(s.procs, p)] = np
	s.restarts[p.name] = append(recent, now)
	if perr := s.pids.add(np.name, np.addr, np.cmd.Process.Pid); perr != nil {
		fmt.Fprintf(s.notify, "%s: could not record its process id: %v\n", np.name, perr)
	}
	s.mu.Unlock()
	if s.healthy != nil {
		if herr := s.healthy(ctx, np); herr != nil {
			if ctx.Err() == nil {
				s.fail(fmt.Errorf("%s exited unexpectedly (%v) and, started again, did not become healthy: %w; see %s", p.name,
					exitReason(err), herr, log))
			}
			go s.await(ctx, np) // stopAll stops it
			return
		}
	}
	fmt.Fprintf(s.notify, "%s: exited unexpectedly (%v); started again as pid %d, serving on %s (restart %d of %d within %s; log %s)\n",
		p.name, exitReason(err), np.cmd.Process.Pid, np.addr, len(recent)+1, maxRestarts, restartWindow, log)
	if s.restartC != nil {
		s.restartC <- p.name
	}
	go s.await(ctx, np)
}

// stopAll stops every service, in reverse start order, and no service is started again after it began.
func (s *supervisor) stopAll(out io.Writer) {
	s.mu.Lock()
	s.stopping = true
	procs := slices.Clone(s.procs)
	s.mu.Unlock()
	stopAll(procs, out)
}

// exitReason is how a process ended: "signal: killed", "exit status 2".
func exitReason(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func ordinal(n int) string {
	switch n {
	case 1:
		return "1st"
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return fmt.Sprintf("%dth", n)
}
