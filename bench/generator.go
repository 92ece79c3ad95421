package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// A load generator process speaks this line protocol with the harness
// that started it (see Harness):
//
//	harness → generator (stdin):  one JSON GeneratorSpec line
//	generator → harness (stdout): "ready" once connected, set up and warmed up
//	harness → generator:          "go"
//	generator → harness:          "done" the moment the measured phase ends,
//	                              then one JSON GeneratorReport line
//
// so that the harness reads the server's counters exactly around the
// measured phase of every generator, and not around connection set-up,
// warm-up or session teardown.
const (
	lineReady = "ready"
	lineGo    = "go"
	lineDone  = "done"
)

// reportQuantiles is how many equal-weight latency points a generator
// reports: enough that the merged 99th percentile rests on ten points per
// generator.
const reportQuantiles = 1000

// GeneratorSpec is what one generator process is asked to run.
type GeneratorSpec struct {
	Workload   string
	Addr       string
	Clients    int
	InFlight   int
	Duration   time.Duration
	Warmup     time.Duration
	Ops        int
	ValueBytes int
	Watchers   int
	Client     string
}

// GeneratorReport is what one generator measured.
type GeneratorReport struct {
	Ops int
	// Quantiles are latencies at equal steps of cumulative weight, each
	// standing for Ops/len(Quantiles) operations.
	Quantiles []time.Duration
	Extra     map[string]string
}

// ServeGenerator runs one generator process's side of the protocol on in
// and out: it reads the spec, warms the server up with the same workload
// for spec.Warmup (unmeasured), then runs the measured phase between the
// harness's "go" and its own "done", and reports. Its own progress goes
// to log, never to out.
func ServeGenerator(ctx context.Context, in io.Reader, out io.Writer, log *slog.Logger) error {
	lines := bufio.NewScanner(in)
	var spec GeneratorSpec
	if !lines.Scan() {
		return fmt.Errorf("bench: generator: no spec on stdin: %v", lines.Err())
	}
	if err := json.Unmarshal(lines.Bytes(), &spec); err != nil {
		return fmt.Errorf("bench: generator: spec %q: %w", lines.Text(), err)
	}
	o := Options{
		Addr: spec.Addr, Clients: spec.Clients, InFlight: spec.InFlight, Duration: spec.Duration,
		Ops: spec.Ops, ValueBytes: spec.ValueBytes, Watchers: spec.Watchers, Client: spec.Client, Logger: log,
		// The harness throws the server away after the run.
		KeepData: true,
	}
	if spec.Warmup > 0 {
		warm := o
		warm.Duration, warm.Ops = spec.Warmup, 0
		if _, err := Run(ctx, spec.Workload, warm); err != nil {
			return fmt.Errorf("bench: generator: warm-up: %w", err)
		}
	}
	o.hooks = &phaseHooks{
		before: func(ctx context.Context) error {
			if _, err := fmt.Fprintln(out, lineReady); err != nil {
				return err
			}
			if !lines.Scan() {
				return fmt.Errorf("bench: generator: harness closed stdin before %q: %v", lineGo, lines.Err())
			}
			if got := lines.Text(); got != lineGo {
				return fmt.Errorf("bench: generator: harness sent %q, want %q", got, lineGo)
			}
			return ctx.Err()
		},
		after: func() { fmt.Fprintln(out, lineDone) },
	}
	res, err := Run(ctx, spec.Workload, o)
	if err != nil {
		return err
	}
	b, err := json.Marshal(GeneratorReport{Ops: res.Ops, Quantiles: res.dist.quantiles(reportQuantiles), Extra: res.Extra})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s\n", b)
	return err
}

// quantiles returns n latencies at cumulative weight (i+0.5)/n.
func (dist distribution) quantiles(n int) []time.Duration {
	if len(dist.points) == 0 {
		return nil
	}
	q := make([]time.Duration, n)
	for i := range q {
		q[i] = dist.percentile((float64(i) + 0.5) / float64(n))
	}
	return q
}

// mergeReports merges generators' reports into one operation count and
// one latency distribution, each generator weighted by its operations.
func mergeReports(reports []GeneratorReport) (int, distribution) {
	var (
		ops  int
		dist distribution
	)
	for _, r := range reports {
		ops += r.Ops
		dist.add(r.Quantiles, float64(r.Ops))
	}
	dist.sort()
	return ops, dist
}

// errGeneratorProtocol is returned when a generator says something out of
// turn.
var errGeneratorProtocol = errors.New("bench: generator protocol")

// generatorProc is the harness's end of one generator process.
type generatorProc struct {
	id      int
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan string // stdout, line by line; closed at EOF
	logPath string
}

// startGenerators starts one generator process per spec, confined to the
// generator CPUs and started the way servers are. On error it stops the
// ones it started.
func (h Harness) startGenerators(addr, w string) ([]*generatorProc, error) {
	var gens []*generatorProc
	for i, spec := range h.specs(addr, w) {
		g, err := startGenerator(i, h.Layout.Generator, h.GeneratorCommand, h.Dir, spec)
		if err != nil {
			return gens, err
		}
		gens = append(gens, g)
	}
	return gens, nil
}

func startGenerator(id int, cpus []int, command []string, dir string, spec GeneratorSpec) (*generatorProc, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	g := &generatorProc{id: id, lines: make(chan string, 4), logPath: filepath.Join(dir, fmt.Sprintf("generator-%d.log", id))}
	logFile, err := os.Create(g.logPath)
	if err != nil {
		return nil, fmt.Errorf("bench: generator %d: %w", id, err)
	}
	defer logFile.Close()
	g.cmd = pinnedCommand(cpus, command)
	g.cmd.Stderr = logFile
	if g.stdin, err = g.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := g.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := g.cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start generator %d (%s): %w", id, strings.Join(command, " "), err)
	}
	go func() {
		defer close(g.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20) // a report carries reportQuantiles latencies
		for sc.Scan() {
			g.lines <- sc.Text()
		}
	}()
	if _, err := fmt.Fprintf(g.stdin, "%s\n", b); err != nil {
		return g, fmt.Errorf("bench: generator %d: send spec: %w", id, err)
	}
	return g, nil
}

// next returns the generator's next line, failing after timeout or at
// its exit, with the tail of its log.
func (g *generatorProc) next(ctx context.Context, timeout time.Duration) (string, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case line, ok := <-g.lines:
		if !ok {
			return "", fmt.Errorf("bench: generator %d exited early\n%s", g.id, tailOf(g.logPath))
		}
		return line, nil
	case <-ctx.Done():
		return "", ctx.Err()
	case <-timer.C:
		return "", fmt.Errorf("bench: generator %d silent for %v\n%s", g.id, timeout, tailOf(g.logPath))
	}
}

// expect waits for the generator to say want.
func (g *generatorProc) expect(ctx context.Context, want string, timeout time.Duration) error {
	got, err := g.next(ctx, timeout)
	if err == nil && got != want {
		err = fmt.Errorf("%w: generator %d said %.80q, want %q", errGeneratorProtocol, g.id, got, want)
	}
	return err
}

// report reads the generator's report line.
func (g *generatorProc) report(ctx context.Context, timeout time.Duration) (GeneratorReport, error) {
	var r GeneratorReport
	line, err := g.next(ctx, timeout)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return r, fmt.Errorf("%w: generator %d report %.80q: %v", errGeneratorProtocol, g.id, line, err)
	}
	return r, nil
}

// stopGenerators ends the generator processes, gently if they are done.
func stopGenerators(gens []*generatorProc) error {
	var errs []error
	for _, g := range gens {
		g.stdin.Close()
		done := make(chan error, 1)
		go func() { done <- g.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				errs = append(errs, fmt.Errorf("bench: generator %d: %w\n%s", g.id, err, tailOf(g.logPath)))
			}
		case <-time.After(stopTimeout):
			_ = g.cmd.Process.Kill()
			<-done
			errs = append(errs, fmt.Errorf("bench: generator %d still running %v after the run: killed", g.id, stopTimeout))
		}
	}
	return errors.Join(errs...)
}

// tailOf returns the last lines of a log file, for error messages.
func tailOf(path string) string {
	p := &serverProcess{logPath: path}
	return p.logTail()
}
