package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// Positional-argument checks that say in a sentence what is missing or extra, with the usage line. cobra's own
// ("requires at least 1 arg(s), only received 0") names neither the command nor what it wants.

// noArgs refuses any argument.
func noArgs() cobra.PositionalArgs { return argsBetween(0, 0, "") }

// oneMysis wants exactly one mysis, by name or id.
func oneMysis() cobra.PositionalArgs { return argsBetween(1, 1, "one mysis, by name or id") }

// argsBetween wants min to max arguments (max < 0: no upper bound); what names them for the sentence.
func argsBetween(min, max int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < min:
			return fmt.Errorf("%s needs %s (usage: %s)", cmd.Name(), what, cmd.UseLine())
		case max == 0 && len(args) > 0:
			return fmt.Errorf("%s takes no arguments, got %q (usage: %s)", cmd.Name(), args, cmd.UseLine())
		case max > 0 && len(args) > max:
			return fmt.Errorf("%s takes %s, got %d arguments %q; put quotes around text with spaces (usage: %s)",
				cmd.Name(), what, len(args), args, cmd.UseLine())
		}
		return nil
	}
}
