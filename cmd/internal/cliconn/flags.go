package cliconn

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/tablekit/tablekit"
)

// flagMessage matches the flag package's messages that name a flag with
// one dash: "flag provided but not defined: -bogus", "flag needs an
// argument: -to", `invalid value "x" for flag -parallel: ...` and
// `invalid boolean value "x" for -json: ...`.
var flagMessage = regexp.MustCompile(`^(flag provided but not defined: |flag needs an argument: |invalid value "(?:[^"\\]|\\.)*" for flag |invalid boolean value "(?:[^"\\]|\\.)*" for )-`)

// FlagError returns err, an error of (*flag.FlagSet).Parse, with the flag
// it names written with two dashes, as every command's documentation
// writes flags (the flag package accepts one dash or two on input and
// writes one). flag.ErrHelp and nil come back as they are.
func FlagError(err error) error {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	msg := err.Error()
	if m := flagMessage.FindStringIndex(msg); m != nil {
		return UsageError{msg[:m[1]] + "-" + msg[m[1]:]}
	}
	return UsageError{msg}
}

// PrintFlags writes fs's flags, except those also in skip (nil: none), as
// flag.PrintDefaults does but with two dashes: "--name VALUE", the help
// indented below, and the default when it is not the zero value.
func PrintFlags(w io.Writer, fs, skip *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if skip != nil && skip.Lookup(f.Name) != nil {
			return
		}
		name, help := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		line += "\n    \t" + strings.ReplaceAll(help, "\n", "\n    \t")
		switch f.DefValue {
		case "", "false", "0", "0s", "[]":
		default:
			line += " (default " + f.DefValue + ")"
		}
		fmt.Fprintln(w, line)
	})
}

// JSONLine writes v to w as one line of JSON, redacted as everything the
// commands print is (tablekit.Redact): the one way every --json of
// tablekit and tablekit-worker prints an object.
func JSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, tablekit.Redact(string(b))+"\n")
	return err
}
