package proc

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/internal/authflag"
)

// Session flag names, also keys of the config files.
const (
	FlagZK             = "zk"
	FlagSessionTimeout = "session-timeout"
)

// DialTimeout bounds the first connection of a process: a server that
// does not answer within it is reported instead of waited for.
const DialTimeout = 30 * time.Second

// SessionFlags are the flags of a command that dials the coordination
// service: where it is, the session timeout, and the credential and ACL
// policy (internal/authflag).
func SessionFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: FlagZK, Value: "127.0.0.1:2181", EnvVars: []string{"SHEPHERD_ZK"},
			Usage: "coordination servers and optional chroot: host:port[,host:port…][/chroot]"},
		&cli.DurationFlag{Name: FlagSessionTimeout, Value: recipe.DefaultSessionTimeout,
			Usage: "session timeout: how long after this process dies its work (tasks, runs, leases) is taken over"},
	}, authflag.Flags()...)
}

// SessionOptions are the options of SessionFlags as given to c, with the
// start-up warnings of process logged (authflag.Warn).
func SessionOptions(c *cli.Context, process string, log *slog.Logger) (recipe.Options, error) {
	return authflag.FromContext(c).Options(log, process,
		recipe.Options{SessionTimeout: c.Duration(FlagSessionTimeout), Logger: log})
}

// Dial opens the session SessionFlags describe, waiting at most
// DialTimeout (or until ctx ends) for the first connection.
func Dial(ctx context.Context, c *cli.Context, process string, log *slog.Logger) (*recipe.Session, error) {
	opts, err := SessionOptions(c, process, log)
	if err != nil {
		return nil, err
	}
	return DialOptions(ctx, c.String(FlagZK), process, opts)
}

// DialOptions dials connect with opts, waiting at most DialTimeout. A
// signal (the end of ctx, SignalContext) during the wait is a Stopped.
func DialOptions(ctx context.Context, connect, process string, opts recipe.Options) (*recipe.Session, error) {
	dctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	s, err := recipe.Dial(dctx, connect, opts)
	if err != nil {
		return nil, asStop(ctx, fmt.Errorf("%s: connect to %s: %w", process, connect, err))
	}
	return s, nil
}
