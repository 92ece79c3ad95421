package ctl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
)

// heldArgs splits the arguments of lock and elect, "path [--] command
// [args…]", and checks the path.
func heldArgs(c *cli.Context) (path string, argv []string, err error) {
	args := c.Args().Slice()
	if len(args) > 1 && args[1] == "--" {
		args = append(args[:1:1], args[2:]...)
	}
	if len(args) < 2 {
		return "", nil, usagef("%s: missing command to run (usage: %s)", c.Command.Name, usageLine(c))
	}
	if err := checkPath(args[0], false); err != nil {
		return "", nil, err
	}
	return args[0], args[1:], nil
}

// runHeld runs argv while something — a lock, a leadership — is held, and
// returns its exit status as an *exitError (nil for 0). what names the
// hold in messages ("lock /jobs/x"); lost is closed when it is lost; env
// is added to the command's environment.
//
// The command runs in a process group of its own. SIGINT and SIGTERM sent
// to ctl are forwarded to that group, and ctl waits for the command to
// end. If the hold is lost first, the group is killed at once (SIGKILL):
// someone else may hold it now, and the command's work is no longer
// protected. ctl then exits with ExitLost.
func (r *runner) runHeld(what string, lost <-chan struct{}, argv, env []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = r.env.Stdin
	cmd.Stdout = r.env.Stdout
	cmd.Stderr = r.env.Stderr
	cmd.Env = append(os.Environ(), env...)
	isolate(cmd)
	if err := cmd.Start(); err != nil {
		code := 126 // found but cannot run, as a shell says
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = 127
		}
		return &exitError{code, fmt.Sprintf("%s: cannot run %s: %v", what, argv[0], err)}
	}
	forward := func(sig os.Signal) { _ = signalGroup(cmd.Process, sig) }
	prev := r.sigs.route(forward)
	defer func() { r.sigs.route(prev) }() // restore, discarding forward

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	kill := func() error {
		_ = signalGroup(cmd.Process, os.Kill)
		return <-done
	}
	select {
	case err := <-done:
		select {
		case <-lost:
			// Lost and exited at once: we cannot tell which came first,
			// so the command's end may not have been protected.
			return &exitError{ExitLost, fmt.Sprintf("%s was lost as %s ended: its work may not have been protected", what, commandName(argv))}
		default:
		}
		return commandStatus(err)
	case <-lost:
		kill()
		return &exitError{ExitLost, fmt.Sprintf("%s was lost (session expired or node deleted) while %s ran: killed it", what, commandName(argv))}
	case <-r.ctx.Done():
		kill()
		return r.ctx.Err()
	}
}

// commandStatus turns the command's end into ctl's exit status: its exit
// code, or 128+N for a command killed by signal N, as a shell reports it.
func commandStatus(err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return err
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return &exitError{128 + int(ws.Signal()), ""}
	}
	return &exitError{ee.ExitCode(), ""}
}

// holderID identifies this ctl in a lock's or an election's node:
// host:pid, so an operator listing the nodes sees who holds and waits.
func holderID() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// commandName is argv as one short string, for messages.
func commandName(argv []string) string {
	s := strings.Join(argv, " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return fmt.Sprintf("%q", s)
}
