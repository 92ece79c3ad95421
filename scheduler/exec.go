package scheduler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/shepherd-dev/shepherd/internal/boundedfile"
)

// Limits of what a result carries; the full output stays in the log file.
const (
	outputTailBytes = 4 << 10
	maxResultData   = 256 << 10
	// MaxUpstreamEnv bounds the result data passed in UpstreamEnv: more
	// (or data holding a NUL byte) is in the file of UpstreamEnv+"_FILE"
	// only. Linux refuses to start a program with one environment
	// string over 128 KiB.
	MaxUpstreamEnv = 32 << 10
	killGrace      = 2 * time.Second // SIGTERM to SIGKILL of a timed-out group
)

// JobFunc is a job implemented in Go, registered with
// Scheduler.RegisterFunc. It returns the run's result data. It must
// return when ctx ends (timeout, replaced, session lost).
type JobFunc func(ctx context.Context, run Run, log io.Writer) (data []byte, err error)

// Run describes the run an attempt belongs to.
type Run struct {
	Job       string
	RunKey    string
	Scheduled time.Time
	Attempt   int
	// Upstream are the results of the upstream runs (Job.After) the run
	// waited for, by job.
	Upstream map[string]Result
	// Params are the run's parameters (run-now --param), by name.
	Params map[string]string
	// Shard is the item of a sharded run (Job.Shards) this attempt
	// executes, of Shards; Shards is 0 for a job that is not sharded.
	Shard, Shards int
}

// outcome is one attempt's end.
type outcome struct {
	status   Status
	exitCode int
	err      error
	// final: the run ends with this attempt, whatever its retries (an
	// HTTP job's host is not allowed).
	final  bool
	output string
	data   []byte
	start  time.Time
	end    time.Time
}

// stopCause says why an attempt's context ended early.
type stopCause struct{ status Status }

// tailWriter keeps the last n bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	n   int
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if len(w.buf) > w.n {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-w.n:]...)
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

// execute runs one attempt of p: its command or function, its output
// appended to logPath. ctx ends the attempt early (session lost,
// replaced); context.Cause(ctx) says why.
func (sc *Scheduler) execute(ctx context.Context, p *plan, run Run, logPath string) outcome {
	o := outcome{start: time.Now()}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		o.status, o.err, o.end = Failed, fmt.Errorf("log dir: %w", err), time.Now()
		return o
	}
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		o.status, o.err, o.end = Failed, fmt.Errorf("log file: %w", err), time.Now()
		return o
	}
	defer lf.Close()
	fmt.Fprintf(lf, "=== %s run %s attempt %d on %s at %s\n", run.Job, run.RunKey, run.Attempt, sc.host, o.start.Format(time.RFC3339))
	tail := &tailWriter{n: outputTailBytes}
	out := io.MultiWriter(lf, tail)

	actx, cancel := ctx, context.CancelFunc(func() {})
	if d := p.attemptTimeout(); d > 0 {
		actx, cancel = context.WithTimeoutCause(ctx, d, stopCause{TimedOut})
	}
	defer cancel()
	switch {
	case p.Func != "":
		o.data, o.err = sc.runFunc(actx, p, run, out)
	case p.HTTP != nil:
		o.data, o.exitCode, o.final, o.err = sc.runHTTP(actx, p, run, out)
	default:
		o.data, o.exitCode, o.err = runCommand(actx, p, run, out)
	}
	o.end = time.Now()
	o.output = tail.String()
	switch {
	case actx.Err() != nil:
		o.status = Failed
		var sc stopCause
		if errors.As(context.Cause(actx), &sc) {
			o.status = sc.status
		}
		switch o.status {
		case TimedOut:
			o.err = fmt.Errorf("timeout: still running after %v, stopped (%v)", p.attemptTimeout(), o.err)
		case Replaced:
			o.err = fmt.Errorf("stopped by a later run (concurrencyPolicy replace): %v", o.err)
		default:
			if o.err == nil {
				o.err = context.Cause(actx)
			}
		}
	case o.err != nil:
		o.status = Failed
	default:
		o.status = Succeeded
	}
	fmt.Fprintf(lf, "=== attempt %d: %s (exit %d) after %v\n", run.Attempt, o.status, o.exitCode, o.end.Sub(o.start).Round(time.Millisecond))
	return o
}

func (e stopCause) Error() string { return "run stopped: " + string(e.status) }

func (sc *Scheduler) runFunc(ctx context.Context, p *plan, run Run, out io.Writer) (data []byte, err error) {
	sc.mu.Lock()
	fn := sc.funcs[p.Func]
	sc.mu.Unlock()
	if fn == nil {
		return nil, fmt.Errorf("%w: %q (call RegisterFunc before Run)", ErrUnknownFunc, p.Func)
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("job function panicked: %v", v)
		}
	}()
	return fn(ctx, run, out)
}

// runCommand runs the job's command in its own process group, so that a
// timeout or a stop kills everything it started, not only its shell.
func runCommand(ctx context.Context, p *plan, run Run, out io.Writer) (data []byte, exitCode int, err error) {
	dir, err := os.MkdirTemp("", "shepherd-run-*")
	if err != nil {
		return nil, -1, fmt.Errorf("result file: %w", err)
	}
	defer os.RemoveAll(dir)
	rfName := filepath.Join(dir, "result")
	if err := os.WriteFile(rfName, nil, 0o600); err != nil {
		return nil, -1, fmt.Errorf("result file: %w", err)
	}
	runEnv, err := commandEnv(run, rfName, dir)
	if err != nil {
		return nil, -1, err
	}

	cmd := exec.Command(p.Command, p.Args...)
	cmd.Dir = p.Dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), runEnv...)
	for k, v := range p.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return nil, -1, fmt.Errorf("start %s: %w", p.Command, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-ctx.Done():
		killGroup(cmd.Process.Pid, waited)
		err = <-waited
	}
	// The leader may have exited leaving children in its group (a
	// backgrounded process); they belong to the run and end with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	exitCode = cmd.ProcessState.ExitCode()
	if err != nil {
		return nil, exitCode, fmt.Errorf("%s: %w", p.Command, err)
	}
	data, err = readResultFile(ctx, rfName)
	return data, exitCode, err
}

// killGroup sends SIGTERM to a process group, then SIGKILL if its leader
// has not exited within killGrace. The leader's exit is left in waited.
func killGroup(pgid int, waited chan error) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(killGrace)
	defer t.Stop()
	select {
	case err := <-waited:
		waited <- err
	case <-t.C:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// readResultFile reads what a job wrote to $SHEPHERD_RESULT_FILE: at
// most maxResultData bytes, and not past ctx (the job may have left a FIFO
// there).
func readResultFile(ctx context.Context, name string) ([]byte, error) {
	data, err := boundedfile.Read(ctx, name, maxResultData)
	if errors.Is(err, boundedfile.ErrTooLarge) {
		return nil, fmt.Errorf("result file: more than %d bytes; write large results elsewhere and put a reference in the result file", maxResultData)
	}
	if err != nil {
		return nil, fmt.Errorf("result file: %w", err)
	}
	if len(data) == 0 {
		return nil, nil
	}
	return data, nil
}

// commandEnv is the environment Shepherd gives a run's command (besides
// the job's env): SHEPHERD_JOB, SHEPHERD_RUN_KEY, …, SHEPHERD_SHARD and
// SHEPHERD_SHARDS for an item of a sharded run, SHEPHERD_PARAM_<k>
// of each parameter and, for each
// upstream run, UpstreamEnv(job) with its data (when at most
// MaxUpstreamEnv bytes without a NUL), _FILE naming a file in dir
// holding it, and _STATUS.
func commandEnv(run Run, resultFile, dir string) ([]string, error) {
	env := []string{
		"SHEPHERD_JOB=" + run.Job,
		"SHEPHERD_RUN_KEY=" + run.RunKey,
		"SHEPHERD_ATTEMPT=" + strconv.Itoa(run.Attempt),
		"SHEPHERD_SCHEDULED_TIME=" + run.Scheduled.Format(time.RFC3339),
		"SHEPHERD_RESULT_FILE=" + resultFile,
	}
	if run.Shards > 0 {
		env = append(env, "SHEPHERD_SHARD="+strconv.Itoa(run.Shard), "SHEPHERD_SHARDS="+strconv.Itoa(run.Shards))
	}
	env = append(env, paramEnv(run.Params)...)
	jobs := make([]string, 0, len(run.Upstream))
	for j := range run.Upstream {
		jobs = append(jobs, j)
	}
	slices.Sort(jobs)
	for _, j := range jobs {
		r := run.Upstream[j]
		v := UpstreamEnv(j)
		f := filepath.Join(dir, "upstream-"+j)
		if err := os.WriteFile(f, r.Data, 0o600); err != nil {
			return nil, fmt.Errorf("upstream data file of %s: %w", j, err)
		}
		env = append(env, v+"_FILE="+f, v+"_STATUS="+string(r.Status))
		if len(r.Data) <= MaxUpstreamEnv && !bytes.ContainsRune(r.Data, 0) {
			env = append(env, v+"="+string(r.Data))
		}
	}
	return env, nil
}
