package realclients

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

var update = flag.Bool("update", false, "rewrite the zkCli golden transcripts (testdata/zkcli*.golden) from Apache ZooKeeper's")

// zkCliSessions are the scripted zkCli.sh sessions. Each runs in one zkCli
// process against a fresh server of each kind; its normalised transcript
// must equal its golden file, which -update rewrites from ZooKeeper's run.
// Quotas have a session of their own so that a difference there does not
// hide the rest.
var zkCliSessions = []struct{ name, script, golden string }{
	{name: "session", script: "testdata/zkcli_script.txt", golden: "testdata/zkcli.golden"},
	{name: "quota", script: "testdata/zkcli_quota_script.txt", golden: "testdata/zkcli_quota.golden"},
}

const (
	// zkCliMarker starts the line zkCli's "version" command prints. The
	// runner sends "version" after every command: the command is done
	// when its marker comes back. version never talks to the server.
	zkCliMarker = "ZooKeeper CLI version: "
	// zkCliStepTimeout bounds one command, including the JVM's start for
	// the first one (0.5-2 s on two busy cores).
	zkCliStepTimeout = 30 * time.Second
	// zkCliJVMFlags make the short-lived client JVM start faster; the
	// client's behaviour does not depend on them.
	zkCliJVMFlags = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto -Djava.net.preferIPv4Stack=true"
)

// TestZkCliTranscript runs every zkCli session against each server and
// compares the normalised transcripts with the golden files.
func TestZkCliTranscript(t *testing.T) {
	t.Parallel()
	for _, sess := range zkCliSessions {
		steps, connectEvents, err := parseZkCliScript(sess.script)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(sess.name, func(t *testing.T) {
			t.Parallel()
			for _, k := range kinds {
				t.Run(k.name, func(t *testing.T) {
					t.Parallel()
					cli, ok := testpeer.ZkCli()
					testpeer.Require(t, "zkCli.sh", ok, cli+" or java is missing")
					srv := k.start(t)
					got := runZkCli(t, cli, srv.Addr(), connectEvents, steps)
					if *update && k.name == "zookeeper" {
						writeGolden(t, sess.golden, sess.script, got)
						return
					}
					want, err := readGolden(sess.golden)
					if err != nil {
						t.Fatalf("%v (record it with: go test ./coord/realclients -run 'TestZkCliTranscript/.*/zookeeper' -update)", err)
					}
					if d := diffLines(want, got); d != "" {
						t.Errorf("zkCli transcript of %s against %s differs from %s (-golden +%s):\n%s", sess.script, k.name, sess.golden, k.name, d)
					}
				})
			}
		})
	}
}

// zkCliStep is one command of the script and the number of watch events
// it must make the server send.
type zkCliStep struct {
	cmd    string
	events int
}

// parseZkCliScript reads the script format documented at the top of
// testdata/zkcli_script.txt.
func parseZkCliScript(path string) (steps []zkCliStep, connectEvents int, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("read zkCli script: %w", err)
	}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "!events "):
			n, err := strconv.Atoi(strings.TrimPrefix(line, "!events "))
			if err != nil || n < 1 {
				return nil, 0, fmt.Errorf("%s:%d: %q: want !events and a positive count", path, i+1, line)
			}
			if len(steps) == 0 {
				connectEvents += n
			} else {
				steps[len(steps)-1].events += n
			}
		case line == "quit":
			return nil, 0, fmt.Errorf("%s:%d: the runner sends quit itself", path, i+1)
		default:
			steps = append(steps, zkCliStep{cmd: line})
		}
	}
	if len(steps) == 0 {
		return nil, 0, fmt.Errorf("%s: no commands", path)
	}
	for _, s := range steps[:len(steps)-1] {
		if s.cmd == "close" {
			return nil, 0, fmt.Errorf("%s: close must be the last command", path)
		}
	}
	return steps, connectEvents, nil
}

// zkCliOutput collects the client's combined stdout and stderr, line by
// line, into one section per step: section 0 is what zkCli prints before
// the first command, section i what it prints while step i runs.
type zkCliOutput struct {
	mu       sync.Mutex
	step     int
	sections [][]string
	markers  int
	events   int
	done     bool  // the output pipe reached EOF
	readErr  error // why reading stopped, other than EOF
}

func (o *zkCliOutput) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		o.mu.Lock()
		switch {
		case strings.HasPrefix(line, zkCliMarker):
			o.markers++
		default:
			if strings.HasPrefix(line, "WatchedEvent ") {
				o.events++
			}
			for len(o.sections) <= o.step {
				o.sections = append(o.sections, nil)
			}
			o.sections[o.step] = append(o.sections[o.step], line)
		}
		o.mu.Unlock()
	}
	o.mu.Lock()
	o.done, o.readErr = true, sc.Err()
	o.mu.Unlock()
}

// waitFor polls until the client has printed markers markers and events
// events, or fails: output ended, or the step took too long.
func (o *zkCliOutput) waitFor(markers, events int) error {
	deadline := time.Now().Add(zkCliStepTimeout)
	for {
		o.mu.Lock()
		m, e, done := o.markers, o.events, o.done
		o.mu.Unlock()
		switch {
		case m >= markers && e >= events:
			return nil
		case done:
			return fmt.Errorf("zkCli output ended with %d/%d commands done and %d/%d watch events", m, markers, e, events)
		case time.Now().After(deadline):
			return fmt.Errorf("after %v: %d/%d commands done, %d/%d watch events", zkCliStepTimeout, m, markers, e, events)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (o *zkCliOutput) setStep(i int) {
	o.mu.Lock()
	o.step = i
	o.mu.Unlock()
}

func (o *zkCliOutput) snapshot() [][]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([][]string, len(o.sections))
	for i, s := range o.sections {
		out[i] = append([]string(nil), s...)
	}
	return out
}

// runZkCli runs one zkCli.sh process against addr, feeds it the steps one
// at a time and returns the normalised transcript. Each command is sent
// only when the previous one, and the watch events it causes, have been
// printed; that makes the transcript deterministic although zkCli prints
// watch events from another thread.
func runZkCli(t *testing.T, cli, addr string, connectEvents int, steps []zkCliStep) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, "-server", addr)
	// TZ fixes how ctime and mtime are printed; CLIENT_JVMFLAGS is read
	// by the Debian zkCli.sh wrapper.
	cmd.Env = append(os.Environ(), "TZ=UTC", "CLIENT_JVMFLAGS="+zkCliJVMFlags)
	cmd.WaitDelay = 5 * time.Second
	ownProcessGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// One pipe for stdout and stderr keeps zkCli's results (stdout) and
	// errors (stderr) in the order it printed them.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pw.Close()
		t.Fatalf("start %s: %v", cli, err)
	}
	pw.Close()
	out := &zkCliOutput{}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		out.read(pr)
	}()
	fail := func(format string, args ...any) {
		t.Helper()
		cancel()
		<-readDone
		_ = cmd.Wait()
		t.Fatalf("zkCli against %s: %s\noutput so far:\n%s", addr, fmt.Sprintf(format, args...),
			strings.Join(renderZkCli(steps, out.snapshot()), "\n"))
	}

	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(stdin, s); err != nil {
			fail("write %q to zkCli: %v", s, err)
		}
	}
	// The first marker ends the banner and the connection.
	send("version\n")
	wantEvents := connectEvents
	if err := out.waitFor(1, wantEvents); err != nil {
		fail("connect: %v", err)
	}
	for i, s := range steps {
		out.setStep(i + 1)
		wantEvents += s.events
		wantMarkers := i + 2
		if s.cmd == "close" {
			// A closed zkCli answers "version" with "Not connected":
			// close is last, and done when its events are in.
			send(s.cmd + "\n")
			wantMarkers--
		} else {
			send(s.cmd + "\nversion\n")
		}
		if err := out.waitFor(wantMarkers, wantEvents); err != nil {
			fail("step %d %q: %v", i+1, s.cmd, err)
		}
	}
	out.setStep(len(steps) + 1)
	send("quit\n")
	stdin.Close()
	<-readDone
	if err := cmd.Wait(); err != nil {
		fail("zkCli exited: %v", err)
	}
	if out.readErr != nil {
		fail("read output: %v", out.readErr)
	}
	out.mu.Lock()
	extra := out.events - wantEvents
	out.mu.Unlock()
	transcript := normalizeZkCli(renderZkCli(steps, out.snapshot()), addr)
	if extra != 0 {
		t.Errorf("zkCli against %s printed %d watch events more than the script expects", addr, extra)
	}
	return transcript
}

// renderZkCli lays out the sections as a transcript: each command after
// "> ", then what it printed, then the watch events printed while it ran,
// in arrival order. Events come last because zkCli prints them from its
// event thread, racing with the command's own output. SLF4J's start-up
// warnings are dropped, and unordered results sorted (see unordered).
func renderZkCli(steps []zkCliStep, sections [][]string) []string {
	var lines []string
	// Section len(steps)+1 is quit's; a command that printed nothing has
	// no section, but its "> command" line is still shown.
	for i := range len(steps) + 2 {
		var sec []string
		if i < len(sections) {
			sec = sections[i]
		}
		var cmd string
		switch {
		case i == 0:
		case i <= len(steps):
			cmd = steps[i-1].cmd
			lines = append(lines, "> "+cmd)
		default:
			lines = append(lines, "> quit")
		}
		var out, events []string
		for j, l := range sec {
			switch {
			case strings.HasPrefix(l, "SLF4J: "), l == "WATCHER::":
			case strings.HasPrefix(l, "WatchedEvent "):
				events = append(events, "WATCHER:: "+l)
			case l == "" && j+1 < len(sec) && (sec[j+1] == "WATCHER::" || strings.HasPrefix(sec[j+1], "WatchedEvent ")):
				// zkCli prints "\nWATCHER::" and "\nWatchedEvent ...".
			default:
				out = append(out, l)
			}
		}
		lines = append(lines, unordered(cmd, out)...)
		lines = append(lines, events...)
	}
	return lines
}

// unordered sorts the output of commands whose results are sets in an
// order the server chooses; Apache ZooKeeper's is that of a hash set, so
// a transcript must not depend on it. getEphemerals prints a list
// "[a, b]"; whoami prints "Auth scheme: User" and then one line per
// identity.
func unordered(cmd string, out []string) []string {
	name, _, _ := strings.Cut(cmd, " ")
	switch name {
	case "getEphemerals":
		out = slices.Clone(out)
		for i, l := range out {
			out[i] = sortedList(l)
		}
	case "whoami":
		if len(out) > 1 {
			out = slices.Clone(out)
			slices.Sort(out[1:])
		}
	}
	return out
}

// sortedList sorts the items of a list printed as "[a, b, c]".
func sortedList(l string) string {
	inner, ok := strings.CutPrefix(l, "[")
	inner, ok2 := strings.CutSuffix(inner, "]")
	if !ok || !ok2 || inner == "" {
		return l
	}
	items := strings.Split(inner, ", ")
	slices.Sort(items)
	return "[" + strings.Join(items, ", ") + "]"
}

// normalizeZkCli replaces what differs between two correct servers and
// between two runs: the server address, times, zxids and session ids.
// zxids and session ids become numbered placeholders in order of first
// appearance, so equalities (cZxid == mZxid, the same session owning two
// ephemerals) still show. The epoch time, the root node's ctime, is kept.
func normalizeZkCli(lines []string, addr string) []string {
	zxids := placeholders{prefix: "zxid"}
	sessions := placeholders{prefix: "session"}
	out := make([]string, len(lines))
	for i, l := range lines {
		l = strings.ReplaceAll(l, addr, "<server>")
		key, val, ok := strings.Cut(l, " = ")
		switch {
		case !ok:
		case key == "cZxid" || key == "mZxid" || key == "pZxid":
			l = key + " = " + zxids.of(val)
		case (key == "ctime" || key == "mtime") && val != "Thu Jan 01 00:00:00 UTC 1970":
			l = key + " = <time>"
		case key == "ephemeralOwner" && val != "0x0":
			l = key + " = " + sessions.of(val)
		}
		out[i] = l
	}
	return out
}

// placeholders numbers distinct values in order of first appearance.
type placeholders struct {
	prefix string
	seen   map[string]string
}

func (p *placeholders) of(v string) string {
	if p.seen == nil {
		p.seen = map[string]string{}
	}
	if s, ok := p.seen[v]; ok {
		return s
	}
	s := fmt.Sprintf("<%s-%d>", p.prefix, len(p.seen)+1)
	p.seen[v] = s
	return s
}

// goldenHeader explains a golden file to its reader; readGolden skips it.
const goldenHeader = `# zkCli.sh transcript of %s against Apache ZooKeeper 3.8,
# normalised (zxids, session ids, times, address). shepherd coord must print
# exactly this. Regenerate: go test ./coord/realclients -run 'TestZkCliTranscript/.*/zookeeper' -update
`

func readGolden(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("no golden zkCli transcript: %w", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for len(lines) > 0 && strings.HasPrefix(lines[0], "# ") {
		lines = lines[1:]
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("golden zkCli transcript %s is empty", path)
	}
	return lines, nil
}

func writeGolden(t *testing.T, path, script string, lines []string) {
	t.Helper()
	body := fmt.Sprintf(goldenHeader, filepath.Base(script)) + strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(filepath.FromSlash(path), []byte(body), 0o644); err != nil {
		t.Fatalf("update golden: %v", err)
	}
	t.Logf("wrote %s (%d lines)", path, len(lines))
}
