package proc

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

// SignalContext is c's context, ended by SIGINT or SIGTERM. Every file a
// command is given is read under it, so that a FIFO nobody writes or a
// hung mount cannot make the process deaf to a stop.
func SignalContext(c *cli.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
}

// ReadInputFile reads the file path given to --flag: at most max bytes
// (internal/boundedfile), and a Stopped if a signal comes first.
func ReadInputFile(c *cli.Context, flag, path string, max int64) ([]byte, error) {
	var data []byte
	err := UnderSignals(c, flag, path, func(ctx context.Context) (err error) {
		data, err = boundedfile.Read(ctx, path, max)
		return err
	})
	return data, err
}

// UnderSignals runs read, which reads the file path given to --flag,
// under SignalContext; its error names the flag, and is a Stopped if a
// signal ended the read.
func UnderSignals(c *cli.Context, flag, path string, read func(context.Context) error) error {
	ctx, stop := SignalContext(c)
	defer stop()
	slog.Debug("reading", "flag", flag, "file", path)
	if err := read(ctx); err != nil {
		return asStop(ctx, fmt.Errorf("--%s: %w", flag, err))
	}
	return nil
}

// Stopped is the error of a command that SIGINT or SIGTERM stopped before
// it got to its work, e.g. while it read its config: main logs it and
// exits 0, as after a stop at any later moment.
type Stopped struct{ err error }

func (s *Stopped) Error() string { return s.err.Error() }
func (s *Stopped) Unwrap() error { return s.err }

// asStop marks err, from work done under ctx (SignalContext), as Stopped
// when a signal ended ctx.
func asStop(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return &Stopped{err}
	}
	return err
}
