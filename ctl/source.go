package ctl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/collector"
)

// sourceCommand is "source add|rm|list": the log sources of /logs/sources.
func (r *runner) sourceCommand() *cli.Command {
	sub := func(name, usage, args string, action cli.ActionFunc) *cli.Command {
		return &cli.Command{Name: name, Usage: usage, ArgsUsage: args, Action: action}
	}
	return &cli.Command{
		Name:      "source",
		Usage:     "manage the log sources the collectors share (/logs/sources)",
		ArgsUsage: "add|rm|list [uri…]",
		Description: `add URI… adds file:///abs/glob and http(s):// sources, rm URI… removes them,
list prints them one per line (--json: a document). The assigner gives new sources to
collectors and takes removed ones away at its next round. See docs/collector.md.`,
		Subcommands: []*cli.Command{
			sub("add", "add sources", "uri…", r.sourceAdd),
			sub("rm", "remove sources", "uri…", r.sourceRm),
			sub("list", "list sources", "", r.sourceList),
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("source: unknown subcommand %q: want add, rm or list", c.Args().First())
			}
			return usagef("source: missing subcommand: want add, rm or list")
		},
	}
}

func (r *runner) sourceAdd(c *cli.Context) error {
	uris := c.Args().Slice()
	if len(uris) == 0 {
		return usagef("source add: missing source URI (usage: source add uri…)")
	}
	for _, u := range uris {
		if err := collector.ValidateSource(u); err != nil {
			return usagef("source add: %v", strings.TrimPrefix(err.Error(), "collector: "))
		}
	}
	s, err := r.session()
	if err != nil {
		return err
	}
	r.warnUnsecured(s, "collectors refuse the sources")
	ctx, cancel := r.opCtx()
	n, err := collector.NewAdmin(s).AddSources(ctx, uris...)
	cancel()
	before, after := sourcesFields(uris, nil)
	r.record("sources.change", "sources", before, after, err)
	if err != nil {
		return r.collectorError(collector.SourcesPath, err)
	}
	return r.printCount("added", n, len(uris))
}

func (r *runner) sourceRm(c *cli.Context) error {
	uris := c.Args().Slice()
	if len(uris) == 0 {
		return usagef("source rm: missing source URI (usage: source rm uri…)")
	}
	s, err := r.session()
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	n, err := collector.NewAdmin(s).RemoveSources(ctx, uris...)
	cancel()
	before, after := sourcesFields(nil, uris)
	r.record("sources.change", "sources", before, after, err)
	if err != nil {
		return r.collectorError(collector.SourcesPath, err)
	}
	if n < len(uris) {
		r.warn("source rm: %d of %d sources were not in the list", len(uris)-n, len(uris))
	}
	return r.printCount("removed", n, len(uris))
}

func (r *runner) printCount(what string, n, asked int) error {
	if r.json {
		return writeJSON(r.env.Stdout, map[string]int{what: n, "asked": asked})
	}
	_, err := fmt.Fprintf(r.env.Stdout, "%s %d of %d\n", what, n, asked)
	return err
}

func (r *runner) sourceList(c *cli.Context) error {
	if c.Args().Present() {
		return usagef("source list: takes no arguments")
	}
	s, err := r.session()
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	uris, err := collector.NewAdmin(s).Sources(ctx)
	cancel()
	if err != nil {
		return r.collectorError(collector.SourcesPath, err)
	}
	if err := r.warnUntrusted(s, collector.LogsRoot, collector.SourcesPath); err != nil {
		return err
	}
	if r.json {
		if uris == nil {
			uris = []string{}
		}
		return writeJSON(r.env.Stdout, map[string][]string{"sources": uris})
	}
	for _, u := range uris {
		if _, err := fmt.Fprintln(r.env.Stdout, u); err != nil {
			return err
		}
	}
	return nil
}

// collectorError words an error of package collector: a malformed
// document names its node, a server error is worded as zkCli words it.
func (r *runner) collectorError(path string, err error) error {
	if errors.Is(err, collector.ErrBadDocument) {
		return fmt.Errorf("%v: fix or delete the node", err)
	}
	return &zkError{path: path, err: err}
}
