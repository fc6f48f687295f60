package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// sleeper starts `sleep 600` as a stand-in service: a real process that only ends when it is signalled.
func sleeper(t *testing.T, name string) *proc {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, addr: "127.0.0.1:0", cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	return p
}

// A service killed while the swarm runs is started again, up to maxRestarts within restartWindow; the next death
// ends the swarm with a sentence that names the service, how it ended and its log. Stopping the swarm restarts
// nothing.
func TestSupervisorRestartsThenGivesUp(t *testing.T) {
	var notes strings.Builder
	var mu sync.Mutex
	ctx, fail := context.WithCancelCause(context.Background())
	defer fail(nil)
	restarted := make(chan string, 8)
	dir := t.TempDir()
	s := &supervisor{restarts: map[string][]time.Time{}, pids: &pidFile{path: filepath.Join(dir, pidFileName)},
		notify: writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return notes.Write(b) }),
		logDir: dir, fail: fail, restartC: restarted,
		start: func(name string) (*proc, error) { return sleeper(t, name), nil }}
	s.add(sleeper(t, "memory"))
	s.add(sleeper(t, "composer"))
	s.watch(ctx)
	current := func(name string) *proc {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, p := range s.procs {
			if p.name == name {
				return p
			}
		}
		t.Fatalf("no %s", name)
		return nil
	}
	for i := 1; i <= maxRestarts; i++ {
		old := current("composer")
		_ = old.cmd.Process.Signal(syscall.SIGKILL)
		select {
		case name := <-restarted:
			if name != "composer" {
				t.Fatalf("restarted %s", name)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("kill %d: composer was not started again", i)
		}
		if now := current("composer"); now == old || now.cmd.Process.Pid == old.cmd.Process.Pid {
			t.Fatalf("kill %d: the supervisor still holds the dead process", i)
		}
	}
	pf, err := readPidFile(filepath.Join(dir, pidFileName))
	if err != nil || len(pf.Services) != 1 || pf.Services[0].PID != current("composer").cmd.Process.Pid {
		t.Fatalf("pid file %+v (%v): want the composer's current pid, once", pf, err)
	}
	mu.Lock()
	got := notes.String()
	mu.Unlock()
	if !strings.Contains(got, "composer: exited unexpectedly (signal: killed); started again as pid") ||
		!strings.Contains(got, "restart 3 of 3 within 2m0s") {
		t.Fatalf("restart notes:\n%s", got)
	}

	_ = current("composer").cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the fourth death within the window did not end the swarm")
	}
	want := "composer exited unexpectedly (signal: killed), the 4th time within 2m0s; see " + filepath.Join(dir, "composer.log")
	if err := failure(ctx); err == nil || err.Error() != want {
		t.Fatalf("swarm ended with %v, want %q", err, want)
	}

	var out strings.Builder
	s.stopAll(&out)
	select {
	case name := <-restarted:
		t.Fatalf("%s was started again while the swarm stopped", name)
	default:
	}
	if !strings.Contains(out.String(), "memory: stopped") {
		t.Fatalf("stop output:\n%s", out.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// noticeWriter passes each line on to the console and drops lines while the console has not taken the ones before.
func TestNoticeWriterSendsLines(t *testing.T) {
	w := make(noticeWriter, 2)
	fmt.Fprintf(w, "composer: started again\nrunner: started again\n")
	fmt.Fprintln(w, "bus: started again") // the channel is full: dropped
	if a, b := <-w, <-w; a != "composer: started again" || b != "runner: started again" || len(w) != 0 {
		t.Fatalf("lines %q, %q, %d more", a, b, len(w))
	}
}

// zoea dev --stop says what it stopped: orphans one by one, or that nothing recorded was running any more.
func TestStopStaleSaysWhatItStopped(t *testing.T) {
	dir := t.TempDir()
	orphan := sleeper(t, "memory")
	pf := &pidFile{path: filepath.Join(dir, pidFileName), Launcher: procRecord{Name: "zoea dev", PID: 1 << 22}}
	if err := pf.add("memory", "127.0.0.1:7001", orphan.cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := stopStale(dir, &out); err != nil || !strings.Contains(out.String(), "stopped 1 orphaned service; ") {
		t.Fatalf("stop: %v\n%s", err, out.String())
	}
	<-orphan.done
	if err := pf.write(); err != nil { // the record again, its processes gone
		t.Fatal(err)
	}
	out.Reset()
	if err := stopStale(dir, &out); err != nil || !strings.Contains(out.String(), "nothing was running; ") {
		t.Fatalf("stop with nothing alive: %v\n%s", err, out.String())
	}
}
