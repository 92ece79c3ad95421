package ctl

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/monitor"
)

// alertCommand is `ctl alert …`: the alerts of `shepherd monitor`, its
// silences, and a test of its channels. The logic is package monitor's.
func (r *runner) alertCommand() *cli.Command {
	return &cli.Command{
		Name:        "alert",
		Usage:       "the monitor's alerts: list, silence, unsilence, test",
		ArgsUsage:   "verb [args…]",
		Description: "Alerts of `shepherd monitor`, kept in /shepherd/monitor. See docs/monitor.md.",
		Subcommands: []*cli.Command{
			{Name: "list", Usage: "alerts firing and pending, the latest notifications and the silences", Action: r.alertList},
			{
				Name: "silence", Usage: "mute the alerts matching every NAME=VALUE (rule=TaskFailed, task=orders …) for a while",
				ArgsUsage: "[--for 2h] [--comment text] [--id id] NAME=VALUE…",
				Flags: []cli.Flag{
					&cli.DurationFlag{Name: "for", Value: 2 * time.Hour, Usage: "how long the silence lasts"},
					&cli.StringFlag{Name: "comment", Usage: "why (shown by alert list)"},
					&cli.StringFlag{Name: "id", Usage: "the silence's name (default s-<time>-<random>)"},
				},
				Action: r.alertSilence,
			},
			{Name: "unsilence", Usage: "delete a silence", ArgsUsage: "id", Action: r.alertUnsilence},
			{
				Name: "test", Usage: "send a test notification to each channel of a monitor config (no coordination server needed)",
				ArgsUsage: "--monitor-config monitor.yaml | --webhook URL…",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "monitor-config", Usage: "the monitor's config file"},
					&cli.StringSliceFlag{Name: "webhook", Usage: "a webhook URL (repeatable)"},
				},
				Action: r.alertTest,
			},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usagef("alert: unknown verb %q: want list, silence, unsilence or test", c.Args().First())
			}
			return usagef("alert: missing verb: want list, silence, unsilence or test")
		},
	}
}

func (r *runner) alertList(c *cli.Context) error {
	_, s, err := r.argsSession(c, 0, 0)
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	st, _, err := monitor.ReadState(ctx, s)
	if err != nil {
		return err
	}
	sils, refused, err := monitor.Silences(ctx, s, true)
	if err != nil {
		return err
	}
	for id, why := range refused {
		r.warn("silence %s is not honoured by the monitor: %s", id, why)
	}
	if r.json {
		return writeJSON(r.env.Stdout, struct {
			monitor.State
			Silences []monitor.Silence `json:"silences"`
		}{st, sils})
	}
	return writeAlerts(r.env.Stdout, st, sils)
}

// writeAlerts prints the alerts, the latest notifications and the
// silences.
func writeAlerts(w io.Writer, st monitor.State, sils []monitor.Silence) error {
	if st.Active != "" {
		fmt.Fprintf(w, "active monitor %s, last evaluation %s\n", st.Active, st.Updated.UTC().Format(time.RFC3339))
	} else {
		fmt.Fprintln(w, "no monitor has evaluated yet")
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nRULE\tSEVERITY\tLABELS\tSTATE\tSINCE\tSUMMARY")
	for _, k := range slices.Sorted(maps.Keys(st.Alerts)) {
		a := st.Alerts[k]
		state := a.State
		if a.Silenced {
			state += " (silenced)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.Rule, a.Severity, monitor.FormatLabels(a.Labels), state, a.Since.UTC().Format(time.RFC3339), a.Summary)
	}
	fmt.Fprintln(tw, "\nSILENCE\tMATCHES\tUNTIL\tCOMMENT")
	for _, sl := range sils {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", sl.ID, monitor.FormatLabels(sl.Matchers), sl.EndsAt.UTC().Format(time.RFC3339), sl.Comment)
	}
	if n := len(st.Events); n > 0 {
		fmt.Fprintln(tw, "\nNOTIFIED\tSTATUS\tRULE\tLABELS")
		for _, e := range st.Events[max(0, n-10):] {
			at := e.StartsAt
			if !e.EndsAt.IsZero() {
				at = e.EndsAt
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", at.UTC().Format(time.RFC3339), e.Status, e.Rule, monitor.FormatLabels(e.Labels))
		}
	}
	return tw.Flush()
}

func (r *runner) alertSilence(c *cli.Context) error {
	args, s, err := r.argsSession(c, 1, -1)
	if err != nil {
		return err
	}
	if d := c.Duration("for"); d <= 0 {
		return usagef("alert silence: --for %v: must be positive", d)
	}
	sl := monitor.Silence{ID: c.String("id"), Matchers: map[string]string{}, Comment: c.String("comment"),
		EndsAt: time.Now().Add(c.Duration("for")).UTC(), By: s.Identity()}
	if sl.ID == "" {
		sl.ID = monitor.NewSilenceID(time.Now())
	}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" || v == "" {
			return usagef("alert silence: %q: want NAME=VALUE (rule=TaskFailed, task=orders, job=…, collector=…, server=…)", a)
		}
		sl.Matchers[k] = v
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	err = monitor.AddSilence(ctx, s, sl)
	r.record("alert.silence", "silence/"+sl.ID, nil, sl, err)
	if err != nil {
		return err
	}
	if r.json {
		return writeJSON(r.env.Stdout, sl)
	}
	fmt.Fprintf(r.env.Stdout, "silence %s until %s\n", sl.ID, sl.EndsAt.Format(time.RFC3339))
	return nil
}

func (r *runner) alertUnsilence(c *cli.Context) error {
	args, s, err := r.argsSession(c, 1, 1)
	if err != nil {
		return err
	}
	ctx, cancel := r.opCtx()
	defer cancel()
	var before any
	if sils, _, err := monitor.Silences(ctx, s, false); err == nil {
		if i := slices.IndexFunc(sils, func(sl monitor.Silence) bool { return sl.ID == args[0] }); i >= 0 {
			before = sils[i]
		}
	}
	err = monitor.RemoveSilence(ctx, s, args[0])
	r.record("alert.unsilence", "silence/"+args[0], before, nil, err)
	return err
}

func (r *runner) alertTest(c *cli.Context) error {
	if _, err := argsN(c, 0, 0); err != nil {
		return err
	}
	cfg := monitor.DefaultConfig()
	if p := c.String("monitor-config"); p != "" {
		var err error
		if cfg, err = monitor.LoadConfig(r.ctx, p); err != nil {
			return err
		}
	}
	for _, u := range c.StringSlice("webhook") {
		cfg.Webhooks = append(cfg.Webhooks, monitor.WebhookConfig{URL: u})
	}
	res, err := monitor.SendTest(r.ctx, cfg, "shepherd ctl alert test")
	if err != nil {
		return err
	}
	if r.json {
		out := map[string]string{}
		for name, err := range res {
			out[name] = "ok"
			if err != nil {
				out[name] = err.Error()
			}
		}
		if err := writeJSON(r.env.Stdout, out); err != nil {
			return err
		}
	}
	failed := 0
	for _, name := range slices.Sorted(maps.Keys(res)) {
		if err := res[name]; err != nil {
			failed++
			if !r.json {
				fmt.Fprintf(r.env.Stdout, "FAILED %s: %v\n", name, err)
			}
		} else if !r.json {
			fmt.Fprintf(r.env.Stdout, "ok %s\n", name)
		}
	}
	if failed > 0 {
		return fmt.Errorf("alert test: %d of %d channels failed", failed, len(res))
	}
	return nil
}
