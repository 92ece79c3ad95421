package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Compare runs every workload on every target and writes the table (see
// WriteTable) to out; targets[0] is the baseline the others are compared
// with. Each (workload, target) pair gets a freshly started server, so no
// workload sees another's data or leftover sessions, and only one server
// runs at a time, so they do not compete for the machine; every fresh
// server is warmed up with Options.Warmup of the mixed workload first.
// o.Addr, o.PID and o.Target are set per target. A failure on one pair is
// reported in its row and returned, joined with the others, after the
// table is written; the remaining pairs still run unless ctx ends.
func Compare(ctx context.Context, targets []Target, workloads []string, o Options, out io.Writer) error {
	if len(targets) == 0 {
		return fmt.Errorf("%w: no targets", ErrBadOption)
	}
	for _, w := range workloads {
		if _, err := LookupWorkload(w); err != nil {
			return err
		}
	}
	o, err := o.withDefaults()
	if err != nil {
		return err
	}
	log := o.Logger
	var (
		rows []Row
		errs []error
	)
	for _, w := range workloads {
		for _, t := range targets {
			if ctx.Err() != nil {
				break
			}
			log.Info("bench: compare", "workload", w, "target", t.Name())
			res, err := runOnFresh(ctx, t, w, o)
			res.Workload = w
			// The row names workload and target; the returned error must.
			rows = append(rows, Row{Target: t.Name(), Result: res, Err: err})
			if err != nil {
				errs = append(errs, fmt.Errorf("bench: %s on %s: %w", w, t.Name(), err))
				log.Error("bench: compare", "workload", w, "target", t.Name(), "err", err)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, fmt.Errorf("bench: compare interrupted: %w", err))
	}
	if len(rows) > 0 {
		if err := WriteTable(out, rows); err != nil {
			errs = append(errs, fmt.Errorf("bench: write table: %w", err))
		}
	}
	return errors.Join(errs...)
}

// runOnFresh starts t, warms it up, runs workload w and stops t.
func runOnFresh(ctx context.Context, t Target, w string, o Options) (res Result, err error) {
	if err := t.Start(ctx); err != nil {
		return Result{}, fmt.Errorf("start: %w", err)
	}
	defer func() {
		if serr := t.Stop(); serr != nil {
			err = errors.Join(err, fmt.Errorf("stop: %w", serr))
		}
	}()
	o.Addr, o.PID, o.Target = t.Addr(), t.PID(), t
	if o.Warmup > 0 {
		warm := o
		warm.Duration, warm.Ops, warm.Target = o.Warmup, 0, nil
		if _, err := Run(ctx, "mixed", warm); err != nil {
			return Result{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	return Run(ctx, w, o)
}
