package main

import (
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
)

// buildVersion describes this binary from the build's own stamps: the main
// module's version (a tag, or a pseudo-version derived from the commit,
// which the go command records when building from a git checkout), the
// commit and its time, whether the tree had uncommitted changes, and the Go
// release. It needs no -ldflags, so `go build`, `go install` and `make
// dist` all report the truth.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (built without module information)"
	}
	vcs := map[string]string{}
	for _, s := range info.Settings {
		if k, ok := strings.CutPrefix(s.Key, "vcs."); ok {
			vcs[k] = s.Value
		}
	}
	var b strings.Builder
	b.WriteString(info.Main.Version)
	if rev := vcs["revision"]; rev != "" {
		b.WriteString(" (commit " + rev)
		if vcs["modified"] == "true" {
			b.WriteString(", with uncommitted changes")
		}
		if t := vcs["time"]; t != "" {
			b.WriteString(", " + t)
		}
		b.WriteString(")")
	}
	b.WriteString(" " + info.GoVersion)
	return b.String()
}

// versionCommand is `shepherd version`: what `shepherd --version` prints.
func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version of this binary (as --version does)",
		Action: func(c *cli.Context) error {
			cli.ShowVersion(c)
			return nil
		},
	}
}
