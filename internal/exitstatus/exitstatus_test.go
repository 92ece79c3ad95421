package exitstatus

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestNearest(t *testing.T) {
	names := []string{"up", "coord", "core", "collector", "scheduler", "version", "ls", "json", "config"}
	for _, tc := range []struct{ typed, want string }{
		{"upp", "up"},
		{"versoin", "version"},
		{"colector", "collector"},
		{"confg", "config"},
		{"lss", "ls"},
		{"x", ""},     // one letter of two differs: no guess
		{"xyzzy", ""}, // nothing close
		{"up", ""},    // exact: nothing to suggest
		{"schedule", "scheduler"},
	} {
		if got := Nearest(tc.typed, names); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.typed, got, tc.want)
		}
	}
}

func TestOfAndPrint(t *testing.T) {
	usage := WithCommand(fmt.Errorf("wrapped: %w", Usagef("up: bad")), "shepherd up")
	for _, tc := range []struct {
		err  error
		code int
		out  string
	}{
		{nil, OK, ""},
		{errors.New("boom\nagain"), Failure, "shepherd: boom again\n"},
		{usage, Usage, "shepherd: wrapped: up: bad\nrun 'shepherd up --help' for usage\n"},
		{cli.Exit("", 75), 75, ""},
	} {
		var b bytes.Buffer
		Print(&b, "shepherd: ", tc.err)
		if got := Of(tc.err); got != tc.code || b.String() != tc.out {
			t.Errorf("%v: status %d, printed %q; want %d, %q", tc.err, got, b.String(), tc.code, tc.out)
		}
	}
}
