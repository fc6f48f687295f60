package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync/atomic"
	"syscall"

	"github.com/charmbracelet/x/term"
)

// The console puts the terminal in raw mode on the alternate screen. A process killed with SIGKILL cannot put it
// back, and the shell it returns to then echoes nothing and ignores Enter. So `zoea dev` and `zoea tui`, when they
// draw on a terminal, run in two processes: this small guard, which saves the terminal's state, runs the same
// command line again as a child that does the work, and restores the terminal when the child ends, however it
// ends; and the child, which the kernel signals if the guard itself dies (Pdeathsig, guardDeathSignal), so that it
// stops its services and restores the terminal on its own.

// guardedEnv marks the child, which must not guard again.
const guardedEnv = "ZOEA_TERMINAL_GUARDED"

// guardPid is, in the child, the guard that started it; 0 when this process is not a guarded child.
var guardPid int

// guardDeathSignal is the child's parent-death signal: one the guard never passes on, so receiving it means the guard
// died. (The parent's pid alone cannot tell: the kernel signals the child when the guard's thread that started it
// exits, and while the guard's other threads are still being killed the child's parent is still the guard.)
const guardDeathSignal = syscall.SIGUSR2

// guardDied is set in the child when guardDeathSignal arrived.
var guardDied atomic.Bool

// sayIfGuardLost tells the commander, once the console has put the terminal back, that its guard was killed. The
// shell took the terminal back when the guard died and printed its prompt on the console's screen, which the console
// then left, so the prompt is gone from view: say so, and how to get it back.
func sayIfGuardLost(w *os.File) {
	if guardPid != 0 && (guardDied.Load() || os.Getppid() != guardPid) {
		fmt.Fprintf(w, "zoea: the console's guard process (pid %d) was killed; the console stopped and the terminal is restored. Press Enter for a prompt.\n", guardPid)
	}
}

// exitCode ends the process with a code and no message: the child has already said why.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// terminalModesReset shows the cursor, turns off mouse reporting and bracketed paste and resets colours: what a
// console killed mid-frame leaves switched on. It moves nothing, so it is safe to write however the console ended.
const terminalModesReset = "\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?2004l\x1b[?25h\x1b[0m"

// leaveAltScreen leaves the alternate screen and puts the cursor back where it was when the console entered it. It
// is written only for a console that did not put the terminal back itself: on a terminal already back on its main
// screen it still moves the cursor to that old place, and the shell's prompt then overwrites the first line written
// after the console (zoea dev's "runner: stopped").
const leaveAltScreen = "\x1b[?1049l"

// guardReset is what the guard writes once the child has ended: the full reset when the terminal is not as the guard
// found it (the child died in raw mode, on the alternate screen), only the harmless modes when the child put it back.
func guardReset(restored bool) string {
	if restored {
		return terminalModesReset
	}
	return terminalModesReset + leaveAltScreen
}

// runGuarded runs this command line as a guarded child when stdin and stdout are a terminal and this process is not
// already the child. It reports whether it did (and the child's outcome); false means: do the work here.
// afterKill is said when the child was killed, after the sentence that the terminal is restored.
func runGuarded(stdout *os.File, afterKill string) (bool, error) {
	if os.Getenv(guardedEnv) != "" {
		// The child. Once its guard is gone the shell takes the terminal back, and the child, now in the
		// background, would be stopped (SIGTTOU, SIGTTIN) the moment it puts the terminal back or reads a key:
		// stopped, it would neither restore the terminal nor stop its services. Ignored, those calls just proceed
		// or fail.
		signal.Ignore(syscall.SIGTTOU, syscall.SIGTTIN)
		guardPid = os.Getppid()
		// The guard's death stops the child as a SIGTERM would (main's context ends on it), once it is recorded.
		died := make(chan os.Signal, 1)
		signal.Notify(died, guardDeathSignal)
		go func() {
			<-died
			guardDied.Store(true)
			_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
		}()
		return false, nil
	}
	if !term.IsTerminal(stdout.Fd()) || !term.IsTerminal(os.Stdin.Fd()) {
		return false, nil
	}
	state, err := term.GetState(os.Stdin.Fd())
	if err != nil {
		return false, nil // cannot save it, so cannot restore it: run unguarded rather than not at all
	}
	self, err := os.Executable()
	if err != nil {
		return false, nil
	}
	child := exec.Command(self, os.Args[1:]...)
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, stdout, os.Stderr
	child.Env = append(os.Environ(), guardedEnv+"=1")
	// Pdeathsig fires when the thread that started the child ends: keep this goroutine on it for good.
	runtime.LockOSThread()
	child.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: guardDeathSignal}
	// Ctrl-C outside raw mode reaches the whole foreground process group, the child included; SIGTERM and SIGHUP
	// sent to the guard are passed on. The guard itself stays until the child has finished.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := child.Start(); err != nil {
		return true, fmt.Errorf("start the console process: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- child.Wait() }()
	for {
		select {
		case s := <-sigs:
			if s != os.Interrupt {
				_ = child.Process.Signal(s)
			}
		case err := <-done:
			// The console leaves raw mode and the alternate screen together: terminal modes as the guard saved them
			// mean it left both.
			now, nerr := term.GetState(os.Stdin.Fd())
			_, _ = os.Stdout.WriteString(guardReset(nerr == nil && *now == *state))
			_ = term.Restore(os.Stdin.Fd(), state)
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					fmt.Fprintf(os.Stderr, "zoea: the console process (pid %d) was killed (%s); the terminal is restored.%s\n",
						child.Process.Pid, ws.Signal(), afterKill)
					return true, exitCode(128 + int(ws.Signal()))
				}
				return true, exitCode(ee.ExitCode())
			}
			return true, err
		}
	}
}
