package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/urfave/cli/v2"

	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/authflag"
	"github.com/shepherd-dev/shepherd/internal/boundedfile"
	"github.com/shepherd-dev/shepherd/internal/exitstatus"
)

// Exit statuses of Run, the whole binary's (internal/exitstatus). lock
// and elect also pass their command's status through, and a command
// killed by signal N gives 128+N, as in a shell.
const (
	ExitOK      = exitstatus.OK
	ExitFailure = exitstatus.Failure // the server refused, the connection failed, bad input
	ExitUsage   = exitstatus.Usage   // wrong arguments, unknown flag or verb
	ExitLost    = exitstatus.Lost    // lock or leadership lost while the command ran (EX_TEMPFAIL: retry)
)

// DefaultConnect is --zk when neither the flag nor SHEPHERD_ZK is given.
const DefaultConnect = "127.0.0.1:2181"

// Env is what one ctl run reads and writes besides the server.
type Env struct {
	Stdin  io.Reader // given to commands run by lock and elect; nil: none
	Stdout io.Writer // results
	Stderr io.Writer // errors and warnings
	// Signals delivers the signals the process receives (SIGINT, SIGTERM).
	// They interrupt a wait, and are forwarded to a command run by lock or
	// elect. Nil: none arrive.
	Signals <-chan os.Signal
	// Location is the zone of the times in stat output, time.Local if nil.
	Location *time.Location
	// Logger receives the session's warnings (connection suspended, session
	// lost), and with --verbose its debug messages. Nil: discarded.
	Logger *slog.Logger
	// Engine opens replication tasks' replicators (task reset-epoch).
	// Nil: core.MySQL, the real one.
	Engine core.Engine
}

// Run runs one ctl command line — the words after "shepherd ctl", such
// as ["--zk", "host:2181", "ls", "/"] — and returns its exit status. ctx
// bounds the whole run.
func Run(ctx context.Context, env Env, args []string) int {
	if env.Stdout == nil {
		env.Stdout = io.Discard
	}
	if env.Stderr == nil {
		env.Stderr = io.Discard
	}
	if env.Location == nil {
		env.Location = time.Local
	}
	r := newRunner(ctx, env)
	defer r.close()
	err := r.app().RunContext(r.ctx, append([]string{"shepherd ctl"}, args...))
	return r.report(err)
}

// runner is the state of one Run: the parsed global flags, the session
// (dialled on first use) and the routing of signals.
type runner struct {
	env Env

	ctx    context.Context // ends on the first signal, unless a verb routes signals elsewhere
	cancel context.CancelFunc
	sigs   *signalRouter

	connect        string
	security       authflag.Settings
	json           bool
	timeout        time.Duration
	sessionTimeout time.Duration
	verbose        bool

	sess *recipe.Session
	// engine opens tasks' replicators for task reset-epoch.
	engine core.Engine
	// notFound is the usage error for an unknown verb the user typed.
	notFound error
}

func newRunner(ctx context.Context, env Env) *runner {
	r := &runner{env: env, engine: env.Engine}
	if r.engine == nil {
		r.engine = core.DefaultEngine()
	}
	r.ctx, r.cancel = context.WithCancel(ctx)
	r.sigs = newSignalRouter(env.Signals, r.interrupt)
	return r
}

// interrupt is the default signal handler: stop whatever we wait for.
func (r *runner) interrupt(os.Signal) { r.cancel() }

func (r *runner) close() {
	if r.sess != nil {
		r.sess.Close()
	}
	r.sigs.stop()
	r.cancel()
}

// usagef is a mistake in the command line: exit status 2, the message
// and a hint naming the help of the command (filled in by wireHelp).
func usagef(format string, args ...any) error {
	return exitstatus.Usagef(format, args...)
}

// ctlCommand is the words that run ctl, before its verbs.
const ctlCommand = "shepherd ctl"

// exitError ends the run with a given status, printing msg if not empty.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// ExitCode makes e a cli.ExitCoder, whose status exitstatus.Of reads.
func (e *exitError) ExitCode() int { return e.code }

// report prints err as one line on stderr and returns the exit status.
func (r *runner) report(err error) int {
	if err == nil {
		err = r.notFound
	}
	if err == nil {
		return ExitOK
	}
	code := exitstatus.Of(err)
	if sig := r.sigs.received(); sig != nil && code == ExitFailure && errors.Is(err, context.Canceled) {
		code = 128 + signalNumber(sig)
		err = fmt.Errorf("interrupted by %v", sig)
	}
	exitstatus.WithCommand(err, ctlCommand)
	r.printError(err)
	return code
}

// printError writes err as one line, and a usage error's hint as a
// second (exitstatus.Print); with --json as one document: {"error":
// message, "code": ZooKeeper's error code if the server refused, "hint":
// where the usage is}.
func (r *runner) printError(err error) {
	if !r.json {
		exitstatus.Print(r.env.Stderr, "", err)
		return
	}
	msg := exitstatus.OneLine(err.Error())
	if msg == "" {
		return
	}
	var ze *zkError
	var code, hint string
	if errors.As(err, &ze) {
		code = ze.code()
	}
	var ue *exitstatus.UsageError
	if errors.As(err, &ue) {
		hint = ue.Hint()
	}
	writeJSON(r.env.Stderr, struct {
		Error string `json:"error"`
		Code  string `json:"code,omitempty"`
		Hint  string `json:"hint,omitempty"`
	}{msg, code, hint})
}

// warn writes a warning line to stderr; it never goes to stdout, so it
// cannot corrupt --json output.
func (r *runner) warn(format string, args ...any) {
	fmt.Fprintf(r.env.Stderr, "warning: "+format+"\n", args...)
}

// warnUnsecured warns that, without a credential, what a verb stores is
// world-writable and so refused by the processes meant to act on it.
func (r *runner) warnUnsecured(s *recipe.Session, consequence string) {
	if s != nil && !s.Secured() {
		r.warn("no credential (--auth or --auth-file): anyone can rewrite what this stores, so %s; pass the coordination server's admin.auth with --auth-file (docs/security.md)", consequence)
	}
}

// warnUntrusted warns, on stderr, about each node at paths (below base)
// that processes holding ctl's credential refuse to act on, with why:
// the list verbs show what is stored, and this says what will not run.
// Without a credential there is no identity to check for. The paths are
// checked in one batch (recipe.Session.CheckTrustedAll), the warnings
// written in their order.
func (r *runner) warnUntrusted(s *recipe.Session, base string, paths ...string) error {
	if !s.Secured() || len(paths) == 0 {
		return nil
	}
	ctx, cancel := r.opCtx()
	errs := s.CheckTrustedAll(ctx, base, paths)
	cancel()
	for i, p := range paths {
		err := errs[i]
		switch {
		case errors.Is(err, recipe.ErrUntrusted):
			r.warn("%v", err)
		case err != nil && !errors.Is(err, zk.ErrNoNode):
			return onPath(p, err)
		}
	}
	return nil
}

// session returns the run's session, dialling it on first use.
func (r *runner) session() (*recipe.Session, error) {
	if r.sess != nil {
		return r.sess, nil
	}
	ctx, cancel := context.WithTimeout(r.ctx, r.timeout)
	defer cancel()
	opts := recipe.Options{
		SessionTimeout: r.sessionTimeout,
		Logger:         r.logger(),
		Retry:          recipe.RetryPolicy{BaseDelay: 50 * time.Millisecond, MaxDelay: time.Second, MaxElapsed: r.timeout},
	}
	if err := r.security.Apply(&opts); err != nil {
		return nil, usagef("%v", err)
	}
	s, err := recipe.Dial(ctx, r.connect, opts)
	switch {
	case err == nil:
		r.sess = s
		return s, nil
	case errors.Is(err, recipe.ErrBadConnectString):
		return nil, fmt.Errorf("--zk: %w", err)
	case r.ctx.Err() != nil:
		return nil, err
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("cannot connect to %s within %v: is a ZooKeeper or shepherd coord server listening there? (set --zk host:port, or a longer --timeout)", r.connect, r.timeout)
	}
	return nil, fmt.Errorf("cannot connect to %s: %w", r.connect, err)
}

// logger is the session's logger: warnings only, unless --verbose.
func (r *runner) logger() *slog.Logger {
	if r.env.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	if r.verbose {
		return r.env.Logger
	}
	return slog.New(minLevel{r.env.Logger.Handler(), slog.LevelWarn})
}

// minLevel drops records below its level.
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.level}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.level}
}

// opCtx bounds one request to the server by --timeout.
func (r *runner) opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.ctx, r.timeout)
}

// signalRouter hands each signal to the current handler: by default the
// runner's interrupt, while lock or elect runs a command the forwarding
// to that command.
type signalRouter struct {
	mu      sync.Mutex
	handler func(os.Signal)
	first   os.Signal
	done    chan struct{}
	wg      sync.WaitGroup
}

func newSignalRouter(ch <-chan os.Signal, handler func(os.Signal)) *signalRouter {
	sr := &signalRouter{handler: handler, done: make(chan struct{})}
	if ch == nil {
		return sr
	}
	sr.wg.Add(1)
	go func() {
		defer sr.wg.Done()
		for {
			select {
			case sig := <-ch:
				sr.mu.Lock()
				if sr.first == nil {
					sr.first = sig
				}
				h := sr.handler
				sr.mu.Unlock()
				h(sig)
			case <-sr.done:
				return
			}
		}
	}()
	return sr
}

// route sets the handler of the signals to come and returns the previous one.
func (sr *signalRouter) route(h func(os.Signal)) (prev func(os.Signal)) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	prev, sr.handler = sr.handler, h
	return prev
}

// received returns the first signal received, or nil.
func (sr *signalRouter) received() os.Signal {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	return sr.first
}

func (sr *signalRouter) stop() {
	close(sr.done)
	sr.wg.Wait()
}

// signalNumber is sig's number, for the 128+N exit status.
func signalNumber(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return int(s)
	}
	return int(syscall.SIGINT)
}

// app is the command tree.
func (r *runner) app() *cli.App {
	return &cli.App{
		Name:      "shepherd ctl",
		HelpName:  "shepherd ctl",
		Usage:     "zkCli-like client for shepherd coord and Apache ZooKeeper",
		UsageText: "shepherd ctl [--zk host:port[,host:port…][/chroot]] [--auth [digest:]user:password | --auth-file F] [--json] command [flags] [args]",
		Description: `The verbs of ZooKeeper's zkCli.sh with the same output, plus watch, lock, elect,
dump, load and the four-letter words. Flags go before arguments. Exit status: 0 ok,
1 failure, 2 usage error; lock and elect pass their command's status through.
See docs/ctl.md.`,
		Writer:      r.env.Stdout,
		ErrWriter:   r.env.Stderr,
		HideVersion: true,
		// urfave/cli's own help flag and command are package variables
		// that every run writes to: concurrent Runs in one process (tests,
		// a future "shepherd up") would race on them. Each run has its own.
		HideHelp:               true,
		HideHelpCommand:        true,
		UseShortOptionHandling: true,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "zk", Value: DefaultConnect, EnvVars: []string{"SHEPHERD_ZK"},
				Usage: "servers and optional chroot: host:port[,host:port…][/chroot]"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document per command (watch: per event)"},
			&cli.DurationFlag{Name: "timeout", Value: 15 * time.Second,
				Usage: "bound on connecting and on each request"},
			&cli.DurationFlag{Name: "session-timeout", Value: recipe.DefaultSessionTimeout,
				Usage: "session timeout: how soon the server frees a crashed ctl's locks and ephemeral nodes"},
			&cli.BoolFlag{Name: "verbose", Usage: "log the session's connection events"},
			helpFlag(),
		}, authflag.Flags()...),
		Before:         r.globals,
		ExitErrHandler: func(*cli.Context, error) {}, // report() decides the exit status
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return exitstatus.FlagError(ctlCommand, "", c.App.Flags, err)
		},
		CommandNotFound: func(c *cli.Context, name string) {
			r.notFound = exitstatus.UnknownCommand(ctlCommand, "", name, c.App.Commands)
		},
		Action: func(c *cli.Context) error {
			if c.Bool("help") {
				return cli.ShowAppHelp(c)
			}
			if c.Args().Present() {
				return exitstatus.UnknownCommand(ctlCommand, "", c.Args().First(), c.App.Commands)
			}
			return usagef("no command given")
		},
		Commands: r.commands(),
	}
}

// globals reads the global flags.
func (r *runner) globals(c *cli.Context) error {
	r.connect = c.String("zk")
	r.json = c.Bool("json")
	r.timeout = c.Duration("timeout")
	r.sessionTimeout = c.Duration("session-timeout")
	r.verbose = c.Bool("verbose")
	if r.timeout <= 0 {
		return usagef("--timeout %v: must be positive", r.timeout)
	}
	if r.sessionTimeout <= 0 {
		return usagef("--session-timeout %v: must be positive", r.sessionTimeout)
	}
	r.security = authflag.FromContext(c)
	// Checked now, so that a bad credential is a usage error even for
	// verbs that never connect.
	if err := r.security.Apply(&recipe.Options{}); err != nil {
		return usagef("%v", err)
	}
	return nil
}

// commands lists every verb.
func (r *runner) commands() []*cli.Command {
	cmds := r.znodeCommands()
	cmds = append(cmds, r.watchCommand(), r.lockCommand(), r.electCommand(), r.dumpCommand(), r.loadCommand(), r.taskCommand())
	cmds = append(cmds, r.sourceCommand(), r.collectorCommand(), r.serviceCommand())
	cmds = append(cmds, r.jobCommand(), r.statusCommand(), r.secureCommand(), r.digestCommand(), r.userCommand(), r.tokenCommand(), r.alertCommand())
	cmds = append(cmds, r.fourLetterCommands()...)
	cmds = append(cmds, &cli.Command{
		Name:      "help",
		Aliases:   []string{"h"},
		Usage:     "show the commands, or one command's flags",
		ArgsUsage: "[command [subcommand]]",
		Action: func(c *cli.Context) error {
			if !c.Args().Present() {
				return cli.ShowAppHelp(c)
			}
			cmd, err := findCommand(c.App.Commands, c.Args().Slice())
			if err != nil {
				return err
			}
			return showHelp(c.App.Writer, cmd)
		},
	})
	for _, c := range cmds {
		wireHelp(c, "")
	}
	return cmds
}

// wireHelp gives cmd and every command below it, whose words after
// "shepherd ctl" start with parent, the same help: a --help flag of their
// own (see app; urfave/cli prints the command's help when it is set,
// before any action), each flag with one default (oneDefault), a
// synopsis, and usage errors with exit status 2 whose hint names the
// command's --help. What a command sets itself is kept.
func wireHelp(cmd *cli.Command, parent string) {
	path := strings.TrimSpace(parent + " " + cmd.Name)
	if parent != "" {
		// urfave/cli names top-level commands itself (App.Setup) but a
		// subcommand only once its parent runs: help job add must not wait.
		cmd.HelpName = "shepherd ctl " + path
	}
	if cmd.UsageText == "" {
		cmd.UsageText = strings.TrimSpace("shepherd ctl " + path + " " + cmd.ArgsUsage)
	}
	if cmd.OnUsageError == nil {
		cmd.OnUsageError = func(c *cli.Context, err error, _ bool) error {
			err = exitstatus.FlagError(ctlCommand+" "+path, path, cmd.Flags, err)
			err.(*exitstatus.UsageError).Msg += " (usage: " + strings.TrimPrefix(c.Command.UsageText, ctlCommand+" ") + ")"
			return err
		}
	}
	if act := cmd.Action; act != nil {
		cmd.Action = func(c *cli.Context) error { return exitstatus.WithCommand(act(c), ctlCommand+" "+path) }
	}
	for _, f := range cmd.Flags {
		oneDefault(f)
	}
	if !hasFlag(cmd.Flags, "help") {
		cmd.HideHelp = true
		cmd.Flags = append(cmd.Flags, helpFlag())
	}
	for _, sub := range cmd.Subcommands {
		wireHelp(sub, path)
	}
}

// findCommand follows words (e.g. ["job", "add"]) down the command tree.
func findCommand(cmds []*cli.Command, words []string) (*cli.Command, error) {
	var cmd *cli.Command
	for i, w := range words {
		cmd = nil
		for _, c := range cmds {
			if c.HasName(w) {
				cmd = c
				break
			}
		}
		if cmd == nil {
			return nil, exitstatus.UnknownCommand(ctlCommand, "help", strings.Join(words[:i+1], " "), cmds)
		}
		cmds = cmd.Subcommands
	}
	return cmd, nil
}

// showHelp prints a command's help, as `help <command>` and
// `<command> --help` both show it.
func showHelp(w io.Writer, cmd *cli.Command) error {
	tmpl := cli.CommandHelpTemplate
	if len(cmd.Subcommands) > 0 {
		tmpl = groupHelpTemplate
	}
	cli.HelpPrinter(w, tmpl, cmd)
	return nil
}

// groupHelpTemplate is urfave/cli's SubcommandHelpTemplate listing the
// subcommands by VisibleCommands: its command categories exist only once
// the command has run, and `help job` shows job's before job runs.
const groupHelpTemplate = `NAME:
   {{template "helpNameTemplate" .}}

USAGE:
   {{template "usageTemplate" .}}{{if .Description}}

DESCRIPTION:
   {{template "descriptionTemplate" .}}{{end}}{{if .VisibleCommands}}

COMMANDS:{{range .VisibleCommands}}
   {{join .Names ", "}}{{"\t"}}{{.Usage}}{{end}}{{end}}{{if .VisibleFlags}}

OPTIONS:{{template "visibleFlagTemplate" .}}{{end}}
`

// hasFlag reports whether one of flags is called name.
func hasFlag(flags []cli.Flag, name string) bool {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return true
		}
	}
	return false
}

// defaultInUsage is a default written in a flag's usage: "(default 10s)".
var defaultInUsage = regexp.MustCompile(`\s*\(default:? ([^)]*)\)`)

// oneDefault makes a flag's help state one default. urfave/cli appends
// the flag's Go value, "(default: 0s)", which contradicts the default a
// usage states for a flag whose zero value stands for a default applied
// later (--retry-backoff 0: the scheduler's 10s). A default written in
// the usage wins: it moves to the flag's DefaultText, which urfave/cli
// prints instead of the value.
func oneDefault(f cli.Flag) {
	var usage, def *string
	switch f := f.(type) {
	case *cli.StringFlag:
		usage, def = &f.Usage, &f.DefaultText
	case *cli.BoolFlag:
		usage, def = &f.Usage, &f.DefaultText
	case *cli.DurationFlag:
		usage, def = &f.Usage, &f.DefaultText
	case *cli.IntFlag:
		usage, def = &f.Usage, &f.DefaultText
	case *cli.Int64Flag:
		usage, def = &f.Usage, &f.DefaultText
	case *cli.UintFlag:
		usage, def = &f.Usage, &f.DefaultText
	case *cli.StringSliceFlag:
		usage, def = &f.Usage, &f.DefaultText
	default:
		return // a type ctl does not use; the help test catches a second default
	}
	m := defaultInUsage.FindStringSubmatchIndex(*usage)
	if m == nil {
		return
	}
	if *def == "" {
		*def = (*usage)[m[2]:m[3]]
	}
	*usage = (*usage)[:m[0]] + (*usage)[m[1]:]
}

// helpFlag is a --help flag of this run's own (see app).
func helpFlag() cli.Flag {
	return &cli.BoolFlag{Name: "help", Aliases: []string{"h"}, Usage: "show help", DisableDefaultText: true}
}

// readInput reads the file name given to verb ("-": standard input): at
// most max bytes (internal/boundedfile), until a signal interrupts ctl.
func (r *runner) readInput(verb, name string, max int64) ([]byte, error) {
	var data []byte
	var err error
	if name == "-" {
		if r.env.Stdin == nil {
			return nil, fmt.Errorf("%s: -: no standard input", verb)
		}
		data, err = boundedfile.ReadFrom(r.ctx, r.env.Stdin, "standard input", max)
	} else {
		data, err = boundedfile.Read(r.ctx, name, max)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", verb, err)
	}
	return data, nil
}

// usageLine is "verb args-usage", the synopsis shown in usage errors.
func usageLine(c *cli.Context) string {
	return strings.TrimSpace(c.Command.Name + " " + c.Command.ArgsUsage)
}

// argsSession checks the command's argument count (see argsN) and opens
// the session, for the verbs that take plain arguments.
func (r *runner) argsSession(c *cli.Context, min, max int) ([]string, *recipe.Session, error) {
	args, err := argsN(c, min, max)
	if err != nil {
		return nil, nil, err
	}
	s, err := r.session()
	return args, s, err
}

// argsN returns the command's arguments if there are between min and max
// of them (max < 0: no limit), and a usage error naming the problem
// otherwise.
func argsN(c *cli.Context, min, max int) ([]string, error) {
	a := c.Args().Slice()
	switch {
	case len(a) < min:
		return nil, usagef("%s: missing argument (usage: %s)", c.Command.Name, usageLine(c))
	case max >= 0 && len(a) > max:
		extra := a[max]
		if strings.HasPrefix(extra, "-") {
			return nil, usagef("%s: unexpected argument %q: flags go before the path (usage: %s)", c.Command.Name, extra, usageLine(c))
		}
		return nil, usagef("%s: unexpected argument %q (usage: %s)", c.Command.Name, extra, usageLine(c))
	}
	return a, nil
}
