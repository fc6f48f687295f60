package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/present"
	"github.com/zoeaswarm/zoea/cmd/zoea/internal/tui"
)

func tuiCmd(ep *endpoints) *cobra.Command {
	return &cobra.Command{
		Use:   "tui",
		Short: "The commander's console: every mysis live on one screen, single keys to command them",
		Long: `tui opens the console against the runner, bus and memory services (any runner replica; --token or
ZOEA_ADMIN_TOKEN when the swarm has an admin token). The table follows the bus's event stream.

Keys: n new mysis · b broadcast · m message · r relaunch · s stop · d delete (asks) · c configure ·
enter focus (events, history, full last error) · p context preview · / filter · o sort · ? help · q quit.`,
		Args: noArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !isTerminal(cmd.OutOrStdout()) {
				return present.Sentencef("zoea tui needs a terminal, and stdout is not one; use zoea list, zoea watch or zoea history for plain output")
			}
			if out, ok := cmd.OutOrStdout().(*os.File); ok {
				if guarded, err := runGuarded(out, ""); guarded {
					return err // termguard.go: the console ran in a child, and the terminal is restored
				}
			}
			c, err := ep.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			err = runConsole(cmd.Context(), c, "Zoea", ep, nil)
			sayIfGuardLost(os.Stderr)
			return err
		},
	}
}

// isTerminal says whether w is a terminal (the console needs one; pipes get plain output instead).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// runConsole runs the console until the commander quits or ctx ends.
func runConsole(ctx context.Context, c *clients, title string, ep *endpoints, notices <-chan string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := tui.New(ctx, c.backend(), tui.Options{Title: title, CallTimeout: ep.timeout, Notices: notices})
	// No signal handler of bubbletea's own: main's context already ends on SIGINT, SIGTERM and SIGHUP, and with both,
	// a SIGTERM arriving as the context ends left bubbletea's handler blocked sending a quit message nobody reads,
	// and the program waiting for it for ever (seen when the terminal guard died: the console never exited).
	_, err := tea.NewProgram(m, tea.WithAltScreen(), tea.WithContext(ctx), tea.WithoutSignalHandler()).Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // Ctrl-C from outside, or the swarm stopping: not an error
	}
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	return nil
}
