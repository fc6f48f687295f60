package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pidFileName is where `zoea dev` records its own process and its children, inside the state directory.
const pidFileName = "dev.pids"

// procRecord is one recorded process. Started is the kernel's start time of the process (/proc/<pid>/stat), so a
// pid the system has since given to another program is never signalled.
type procRecord struct {
	Name    string `json:"name"`
	PID     int    `json:"pid"`
	Addr    string `json:"addr,omitempty"`
	Started uint64 `json:"started"`
}

// pidFile is the record of a running local swarm. The launcher's Addr is its web console's address, so that a
// `zoea web` started beside it, or a second `zoea dev`, can say the running swarm already serves there.
type pidFile struct {
	path     string
	Launcher procRecord   `json:"launcher"`
	Launched time.Time    `json:"launched,omitzero"`
	Services []procRecord `json:"services"`
}

// running reports whether the launcher that wrote f still runs (and is not this process).
func (f *pidFile) running() bool {
	return f != nil && f.Launcher.PID != os.Getpid() && f.Launcher.alive()
}

// addr is the recorded address of a service ("" when none is recorded).
func (f *pidFile) addr(name string) string {
	for _, r := range f.Services {
		if r.Name == name {
			return r.Addr
		}
	}
	return ""
}

func selfProcess() procRecord {
	pid := os.Getpid()
	return procRecord{Name: "zoea dev", PID: pid, Started: startTime(pid)}
}

// startTime reads field 22 of /proc/<pid>/stat; 0 when the process does not exist (or /proc is missing).
func startTime(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces and parentheses; the fields after it follow the last ')'.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(fields[19], 10, 64)
	return n
}

// alive reports whether the recorded process still runs (and is the same process, not a reused pid).
func (r procRecord) alive() bool {
	if r.PID <= 0 {
		return false
	}
	st := startTime(r.PID)
	if st == 0 || (r.Started != 0 && st != r.Started) {
		return false
	}
	// A zombie still has /proc/<pid>/stat; signal 0 says nothing about that, the state field does.
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(r.PID) + "/stat")
	s := string(b)
	if rest := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(rest) > 0 && rest[0] == "Z" {
		return false
	}
	return true
}

// add records a service's process, in place of the one recorded for it before (a service started again).
func (f *pidFile) add(name, addr string, pid int) error {
	r := procRecord{Name: name, PID: pid, Addr: addr, Started: startTime(pid)}
	if i := slices.IndexFunc(f.Services, func(s procRecord) bool { return s.Name == name }); i >= 0 {
		f.Services[i] = r
	} else {
		f.Services = append(f.Services, r)
	}
	return f.write()
}

func (f *pidFile) write() error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp := f.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, f.path)
}

// remove deletes the record once every child has stopped.
func (f *pidFile) remove() { _ = os.Remove(f.path) }

func readPidFile(path string) (*pidFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f := &pidFile{path: path}
	if err := json.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// stopStale stops a swarm an earlier `zoea dev` left running: its launcher first (which stops its children in
// order), then any child still alive, newest first, with SIGTERM and after 20 s SIGKILL.
func stopStale(stateDir string, out io.Writer) error {
	path := filepath.Join(stateDir, pidFileName)
	f, err := readPidFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(out, "nothing to stop: no %s (no 'zoea dev' recorded here)\n", path)
		return nil
	}
	if err != nil {
		return err
	}
	stopped, launcher := 0, false
	if f.Launcher.alive() && f.Launcher.PID != os.Getpid() {
		fmt.Fprintf(out, "stopping %s (pid %d), which stops its services in order\n", f.Launcher.Name, f.Launcher.PID)
		launcher = terminate(f.Launcher, 60*time.Second)
	}
	for i := len(f.Services) - 1; i >= 0; i-- {
		r := f.Services[i]
		if !r.alive() {
			continue
		}
		fmt.Fprintf(out, "stopping %s (pid %d, %s)\n", r.Name, r.PID, r.Addr)
		if terminate(r, 20*time.Second) {
			stopped++
		}
	}
	for _, r := range append([]procRecord{f.Launcher}, f.Services...) {
		if r.alive() && r.PID != os.Getpid() {
			return fmt.Errorf("%s (pid %d) is still running", r.Name, r.PID)
		}
	}
	f.remove()
	switch {
	case !launcher && stopped == 0:
		fmt.Fprintf(out, "nothing was running; %s removed\n", path)
	case launcher && stopped == 0:
		fmt.Fprintf(out, "stopped; %s removed\n", path)
	case stopped == 1:
		fmt.Fprintf(out, "stopped 1 orphaned service; %s removed\n", path)
	default:
		fmt.Fprintf(out, "stopped %d orphaned services; %s removed\n", stopped, path)
	}
	return nil
}

// terminate sends SIGTERM, waits up to grace for the process to go, then sends SIGKILL. It reports whether it
// signalled anything. The process is not our child, so its end is observed through /proc, not wait(2).
func terminate(r procRecord, grace time.Duration) bool {
	if err := syscall.Kill(r.PID, syscall.SIGTERM); err != nil {
		return false
	}
	deadline := time.Now().Add(grace)
	for r.alive() {
		if time.Now().After(deadline) {
			_ = syscall.Kill(r.PID, syscall.SIGKILL)
			for range 50 {
				if !r.alive() {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}
