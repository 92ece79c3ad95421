package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/internal/boundedfile"
)

// signalContext is c's context, ended by SIGINT or SIGTERM. Every file a
// command is given is read under it, so that a FIFO nobody writes or a
// hung mount cannot make the process deaf to a stop.
func signalContext(c *cli.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
}

// readInputFile reads the file path given to --flag: at most max bytes
// (internal/boundedfile), and a stop (see stopped) if a signal comes
// first.
func readInputFile(c *cli.Context, flag, path string, max int64) ([]byte, error) {
	var data []byte
	err := underSignals(c, flag, path, func(ctx context.Context) (err error) {
		data, err = boundedfile.Read(ctx, path, max)
		return err
	})
	return data, err
}

// underSignals runs read, which reads the file path given to --flag,
// under signalContext; its error names the flag, and is a stop (see
// stopped) if a signal ended the read.
func underSignals(c *cli.Context, flag, path string, read func(context.Context) error) error {
	ctx, stop := signalContext(c)
	defer stop()
	slog.Debug("reading", "flag", flag, "file", path)
	if err := read(ctx); err != nil {
		return asStop(ctx, fmt.Errorf("--%s: %w", flag, err))
	}
	return nil
}

// stopped is the error of a command that SIGINT or SIGTERM stopped before
// it got to its work, e.g. while it read its config: main logs it and
// exits 0, as after a stop at any later moment.
type stopped struct{ err error }

func (s *stopped) Error() string { return s.err.Error() }
func (s *stopped) Unwrap() error { return s.err }

// asStop marks err, from work done under ctx (signalContext), as stopped
// when a signal ended ctx.
func asStop(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return &stopped{err}
	}
	return err
}
