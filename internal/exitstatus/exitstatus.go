// Package exitstatus is how every command of the shepherd binary ends:
// its exit statuses, the usage error, and what a failure prints on
// stderr. `shepherd ctl` and the process commands (`up`, `coord`, `core`
// …) map errors to statuses through Of and print them through Print, so
// that a mistake in any command line looks and exits the same:
//
//	shepherd: up: flag provided but not defined: -confg (did you mean --config?)
//	run 'shepherd up --help' for usage
//
// with exit status 2 and nothing on stdout.
//
// It only formats and classifies errors; it must never print help text,
// nor exit the process.
package exitstatus

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
)

// Exit statuses of the shepherd binary. ctl's lock and elect also pass
// their command's status through, and a command killed by signal N gives
// 128+N, as in a shell.
const (
	OK      = 0
	Failure = 1  // the server refused, the connection failed, bad input or config
	Usage   = 2  // wrong arguments, unknown flag or command
	Lost    = 75 // ctl lock or elect: lock or leadership lost while the command ran (EX_TEMPFAIL: retry)
)

// UsageError is a mistake in a command line: exit status Usage, its
// message on one line and a hint naming the command's help.
type UsageError struct {
	Msg string
	// Command is the words that name the command whose usage was wrong,
	// such as "shepherd ctl job add"; its help is Command+" --help".
	// Empty until someone who knows it fills it in (WithCommand).
	Command string
}

func (e *UsageError) Error() string { return e.Msg }

// Hint is the line printed after the message: where the usage is.
func (e *UsageError) Hint() string {
	cmd := e.Command
	if cmd == "" {
		cmd = "shepherd"
	}
	return fmt.Sprintf("run '%s --help' for usage", cmd)
}

// Usagef returns a UsageError with the formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// WithCommand sets the command of a UsageError in err that has none yet,
// and returns err.
func WithCommand(err error, command string) error {
	var ue *UsageError
	if errors.As(err, &ue) && ue.Command == "" {
		ue.Command = command
	}
	return err
}

// Of returns the exit status err ends a process with: OK for nil, Usage
// for a UsageError, the code of a cli.ExitCoder, Failure otherwise.
func Of(err error) int {
	if err == nil {
		return OK
	}
	var ue *UsageError
	if errors.As(err, &ue) {
		return Usage
	}
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return Failure
}

// Print writes err to w as one line, prefixed with prefix ("shepherd: ",
// or "" for ctl, whose messages are zkCli's), and for a UsageError a
// second line with its hint. An error with an empty message (a
// cli.Exit("", code) whose command printed its own) prints nothing.
func Print(w io.Writer, prefix string, err error) {
	if err == nil {
		return
	}
	msg := OneLine(err.Error())
	if msg == "" {
		return
	}
	fmt.Fprintln(w, prefix+msg)
	var ue *UsageError
	if errors.As(err, &ue) {
		fmt.Fprintln(w, ue.Hint())
	}
}

// OneLine is msg on one line: inner newlines become spaces.
func OneLine(msg string) string {
	return strings.ReplaceAll(strings.TrimRight(msg, "\n"), "\n", " ")
}

// FlagError turns an error urfave/cli met parsing the flags of command
// (e.g. "flag provided but not defined: -confg") into a UsageError of
// that command, suggesting the nearest flag of flags for an unknown one.
// what names the command in the message ("up", "ctl ls"); empty for the
// binary's own flags.
func FlagError(command, what string, flags []cli.Flag, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		for _, f := range flags {
			names = append(names, f.Names()...)
		}
		if near := Nearest(strings.TrimLeft(name, "-"), names); near != "" {
			msg += " (did you mean " + dashed(near) + "?)"
		}
	}
	if what != "" {
		msg = what + ": " + msg
	}
	return &UsageError{Msg: msg, Command: command}
}

// UnknownCommand is the UsageError for a command name that is none of
// cmds, suggesting the nearest. what names the parent in the message
// ("", "ctl job").
func UnknownCommand(command, what, name string, cmds []*cli.Command) error {
	var names []string
	for _, c := range cmds {
		if !c.Hidden {
			names = append(names, c.Names()...)
		}
	}
	msg := fmt.Sprintf("unknown command %q", name)
	if what != "" {
		msg = what + ": " + msg
	}
	if near := Nearest(name, names); near != "" {
		msg += fmt.Sprintf(" (did you mean '%s'?)", near)
	}
	return &UsageError{Msg: msg, Command: command}
}

func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// Nearest returns the name in names closest to typed by edit distance,
// if it is close enough to be what was meant (at most a third of its
// letters differ, and at least one letter is kept), else "".
func Nearest(typed string, names []string) string {
	best, bestD := "", -1
	for _, n := range names {
		d := editDistance(typed, n)
		if bestD < 0 || d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" || bestD == 0 {
		return ""
	}
	limit := max(1, (len(best)+2)/3)
	if bestD > limit || bestD >= len(best) {
		return ""
	}
	return best
}

// editDistance is the Damerau–Levenshtein distance (optimal string
// alignment) of a and b: insertions, deletions, substitutions and
// transpositions of adjacent letters count one each.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
