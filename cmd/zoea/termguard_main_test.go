package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/term"
)

// fakeConsoleEnv makes the test binary a guarded console instead of running tests (TestMain): the guard and its
// child are the same program, as with the zoea binary.
const fakeConsoleEnv = "ZOEA_TEST_FAKE_CONSOLE"

func TestMain(m *testing.M) {
	if os.Getenv(fakeConsoleEnv) != "" {
		os.Exit(fakeConsole())
	}
	os.Exit(m.Run())
}

// fakeConsole runs through the guard as zoea dev's console does: the child draws on the alternate screen in raw
// mode until a key arrives, puts the terminal back, then prints what zoea dev prints as it stops its services.
func fakeConsole() int {
	if guarded, err := runGuarded(os.Stdout, ""); guarded {
		var code exitCode
		if errors.As(err, &code) {
			return int(code)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	state, err := term.MakeRaw(os.Stdin.Fd())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_, _ = os.Stdout.WriteString("\x1b[?1049h\x1b[H\x1b[2Jfake console drawing")
	_, _ = os.Stdin.Read(make([]byte, 1))
	_, _ = os.Stdout.WriteString("\x1b[?1049l")
	_ = term.Restore(os.Stdin.Fd(), state)
	fmt.Println("runner: stopped")
	fmt.Println("composer: stopped")
	return 0
}

// After a console that ended cleanly the guard must not move the cursor: leaving the alternate screen a second time
// put it back where the console had started, and the shell's prompt overwrote zoea dev's first "stopped" line.
func TestGuardKeepsTheLinesAfterTheConsole(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the guard in tmux")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed, and this test drives the guard in it: apt-get install -y tmux (.ci/services.sh installs it)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &tmuxConsole{t: t, socket: fmt.Sprintf("zoea-guard-lines-%d", os.Getpid()), session: "shell"}
	c.tmux("new-session", "-d", "-s", c.session, "-x", "100", "-y", "20", "env", "PS1=ready$ ", "sh")
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", c.socket, "kill-server").Run() })
	c.waitText("ready$", 30*time.Second)
	c.text(fmt.Sprintf("echo before-the-console; env %s=1 %s; echo guard-ended-$?", fakeConsoleEnv, self))
	c.keys("Enter")
	c.waitText("fake console drawing", 30*time.Second)
	c.keys("q")
	scr := c.waitText("guard-ended-0", 30*time.Second)
	for _, want := range []string{"before-the-console", "runner: stopped", "composer: stopped"} {
		if !strings.Contains(scr, want) {
			t.Errorf("%q is gone from the screen after the console ended:\n%s", want, scr)
		}
	}
	if strings.Contains(scr, "fake console drawing") {
		t.Errorf("the console's screen is still shown:\n%s", scr)
	}
}

func TestGuardResetLeavesTheAltScreenOnlyWhenNeeded(t *testing.T) {
	if strings.Contains(guardReset(true), leaveAltScreen) {
		t.Error("a console that put the terminal back gets the alternate screen left again (the cursor jumps back)")
	}
	if !strings.HasSuffix(guardReset(false), leaveAltScreen) || !strings.Contains(guardReset(false), "\x1b[?25h") {
		t.Error("a console killed mid-frame must get the full reset")
	}
}
