package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zoeaswarm/zoea/cmd/zoea/internal/present"
)

// flagError turns a flag that does not parse into a sentence naming the flag, the value and what it must be; any
// other flag error (an unknown flag) points at the command's help.
func flagError(cmd *cobra.Command, err error) error {
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		return present.BadValue(bad.GetFlag().Name, bad.GetValue(), valueKind(bad.GetFlag().Value.Type()))
	}
	return fmt.Errorf("%v (zoea %s --help lists the flags)", err, cmd.Name())
}

// valueKind says what a flag of pflag type t takes.
func valueKind(t string) string {
	switch t {
	case "duration":
		return "a duration such as 30s, 15m or 2h"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "a whole number"
	case "float32", "float64":
		return "a number"
	case "bool":
		return "true or false"
	}
	return "a valid " + t
}

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
