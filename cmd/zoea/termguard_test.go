package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// childrenOf lists pid's child processes (Linux: /proc/<pid>/task/<tid>/children).
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, s := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(s); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// waitExit waits for process pid, not a child of the test, to end: a pidfd becomes readable when it does.
func waitExit(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return // already gone
	}
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(within.Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("poll pidfd %d: %v", pid, err)
		}
		if n == 0 {
			t.Fatalf("process %d still runs %s after the kill", pid, within)
		}
		return
	}
}

// A console killed with SIGKILL cannot restore the terminal itself: the guard process does, and a killed guard
// makes the console stop and restore it. Either way the shell it returns to echoes and reads lines again.
func TestKilledConsoleLeavesTheTerminalUsable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds zoea and drives it in tmux")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed, and this test drives the console in it: apt-get install -y tmux (.ci/services.sh installs it)")
	}
	bin := filepath.Join(t.TempDir(), "zoea")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build zoea: %v\n%s", err, out)
	}
	nowhere := freeAddr(t) // nothing listens: the console draws and keeps retrying
	for _, kill := range []string{"console", "guard"} {
		t.Run("kill -9 of the "+kill, func(t *testing.T) {
			c := &tmuxConsole{t: t, socket: fmt.Sprintf("zoea-guard-%d-%s", os.Getpid(), kill), session: "shell"}
			// dash, as make runs recipes: unlike an interactive bash it never puts the terminal back itself, so what
			// the test sees is what zoea left.
			c.tmux("new-session", "-d", "-s", c.session, "-x", "120", "-y", "30", "env", "PS1=ready$ ", "sh")
			t.Cleanup(func() { _ = exec.Command("tmux", "-L", c.socket, "kill-server").Run() })
			c.waitText("ready$", 30*time.Second)
			tty := strings.TrimSpace(c.tmux("display-message", "-p", "-t", c.session, "#{pane_tty}"))
			shell, err := strconv.Atoi(strings.TrimSpace(c.tmux("display-message", "-p", "-t", c.session, "#{pane_pid}")))
			if err != nil {
				t.Fatal(err)
			}
			c.text(fmt.Sprintf("%s tui --runner %s --bus %s --memory %s; echo console-ended-$?", bin, nowhere, nowhere, nowhere))
			c.keys("Enter")
			c.waitText("loading the swarm", 60*time.Second)
			guards := childrenOf(t, shell)
			if len(guards) != 1 {
				t.Fatalf("shell %d runs %v, want one guard process", shell, guards)
			}
			consoles := childrenOf(t, guards[0])
			if len(consoles) != 1 {
				t.Fatalf("guard %d runs %v, want one console process", guards[0], consoles)
			}
			if out, _ := exec.Command("stty", "-a", "-F", tty).Output(); !strings.Contains(string(out), "-icanon") {
				t.Fatalf("the console is drawing but the terminal is not raw, so this test would prove nothing:\n%s", out)
			}
			victim := consoles[0]
			if kill == "guard" {
				victim = guards[0]
			}
			if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			c.waitText("console-ended-", 30*time.Second)
			// Every zoea process is gone (a console whose guard was killed stops on the parent-death signal the kernel sends it).
			for _, p := range append(guards, consoles...) {
				waitExit(t, p, 30*time.Second)
			}
			out, err := exec.Command("stty", "-a", "-F", tty).Output()
			if err != nil {
				t.Fatal(err)
			}
			modes := " " + strings.NewReplacer(";", " ", "\n", " ").Replace(string(out)) + " "
			for _, want := range []string{" icanon ", " echo ", " icrnl "} {
				if !strings.Contains(modes, want) {
					t.Errorf("after kill -9 of the %s the terminal lacks%s(line mode, echo, Enter): %s", kill, want, out)
				}
			}
			// What the last process wrote before it exited may not be on tmux's screen yet (tmux reads the terminal
			// in its own time), so wait for the sentence that comes last; the screen read after it is final.
			var scr string
			switch kill {
			case "console":
				// The guard says what happened and puts the terminal back before the shell resumes, so the prompt
				// follows on the shell's screen.
				said := "was killed (killed); the terminal is restored"
				scr = c.waitFor("the guard's sentence, then a prompt", 30*time.Second, func(s string) bool {
					i := strings.Index(s, said)
					return i >= 0 && strings.Contains(s[i:], "ready$")
				})
			case "guard":
				// When the guard is killed the shell prints its prompt at once, while the console is still stopping
				// and has not yet left its screen; the console then says what happened, on the shell's screen.
				scr = c.waitText("guard process (pid "+strconv.Itoa(guards[0])+") was killed", 30*time.Second)
			}
			if strings.Contains(scr, "loading the swarm") {
				t.Errorf("the console's screen is still shown (alternate screen not left):\n%s", scr)
			}
			if kill == "guard" {
				c.keys("Enter")
				c.waitText("ready$", 30*time.Second)
			}
		})
	}
}
