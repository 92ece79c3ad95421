package ctl

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// zkCliScript is what TestMatchesZkCli runs through both tools: every
// verb zkCli shares with ctl, their flags and their errors. Arguments hold
// no spaces (zkCli splits on them).
var zkCliScript = []string{
	"create /t hello",
	"create /t again",
	"create /t/b",
	"create -s /t/s data",
	"create /t/acl x world:anyone:rw",
	"create -c /c",
	"create /x/y z",
	"create t",
	"ls /t",
	"ls -s /t",
	"ls -R /t",
	"ls /nope",
	"get /t",
	"get -s /t",
	"get /t/b",
	"get /nope",
	"set /t v2",
	"set -v 9 /t v3",
	"set -s /t v3",
	"stat /t",
	"stat /nope",
	"getAcl /t/acl",
	"getAcl -s /t",
	"setAcl /t world:anyone:cdra",
	"getAcl /t",
	"setAcl -v 0 /t world:anyone:cdrwa",
	"setAcl /t/b foo:bar:rw",
	"delete /t",
	"delete -v 5 /t/b",
	"delete /t/b",
	"delete /t/",
	"sync /t",
	"deleteall /t",
	"deleteall /nope",
	"ls /",
}

// zkCliJVMFlags make the short-lived client JVM start faster.
const zkCliJVMFlags = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto -Djava.net.preferIPv4Stack=true"

// TestMatchesZkCli runs zkCliScript with zkCli.sh and with ctl, each in a
// fresh chroot of the same server, and compares what each command prints
// (stdout and stderr together: zkCli prints "Created /x" on stderr, ctl
// on stdout, where a script capturing the result finds it), once
// zxids and times are normalised. Times must have zkCli's format to be.
func TestMatchesZkCli(t *testing.T) {
	cli, ok := testpeer.ZkCli()
	onEachTarget(t, func(t *testing.T, tg *target) {
		testpeer.Require(t, "zkCli.sh", ok, cli+" or java is missing")
		base := chrootOf(t, tg)
		zkCliRoot, ctlRoot := base+"/zkcli", base+"/ctl"
		for _, root := range []string{zkCliRoot, ctlRoot} {
			mustCtl(t, root, "create", "/mk")
			for i := range len(zkCliScript) + 1 {
				mustCtl(t, root, "create", fmt.Sprintf("/mk/%d", i), fmt.Sprintf("#%d", i))
			}
		}
		got := make([]string, len(zkCliScript))
		for i, cmd := range zkCliScript {
			r := runCtl(t, ctlRoot, words(cmd)...)
			got[i] = r.stdout + r.stderr
		}
		want := runZkCliScript(t, cli, zkCliRoot, zkCliScript)
		for i, cmd := range zkCliScript {
			if g, w := normalize(got[i]), normalize(want[i]); g != w {
				t.Errorf("%s:\nctl printed\n%s\nzkCli printed\n%s", cmd, g, w)
			}
		}

		// One-shot runs: the exit statuses agree too.
		for _, cmd := range []string{"get /nope", "ls /"} {
			zr := runZkCli(t, cli, zkCliRoot, words(cmd), "")
			cr := runCtl(t, ctlRoot, words(cmd)...)
			if zr.code != cr.code {
				t.Errorf("%s: ctl exits %d, zkCli %d", cmd, cr.code, zr.code)
			}
		}
	})
}

// runZkCliScript feeds script to one zkCli.sh on stdin and returns what
// each command printed on stdout and stderr. Between commands it reads a
// marker node: "get /mk/N" prints "#N" on stdout, "get /mk-no/N" an error
// on stderr, which splits both streams per command.
func runZkCliScript(t *testing.T, cli, connect string, script []string) []string {
	t.Helper()
	var in strings.Builder
	for i, cmd := range script {
		fmt.Fprintf(&in, "get /mk/%d\nget /mk-no/%d\n%s\n", i, i, cmd)
	}
	fmt.Fprintf(&in, "get /mk/%d\nget /mk-no/%d\nquit\n", len(script), len(script))
	r := runZkCli(t, cli, connect, nil, in.String())
	outs := splitMarked(t, r.stdout, func(i int) string { return fmt.Sprintf("#%d", i) }, len(script))
	errs := splitMarked(t, r.stderr, func(i int) string { return fmt.Sprintf("Node does not exist: /mk-no/%d", i) }, len(script))
	sections := make([]string, len(script))
	for i := range script {
		sections[i] = outs[i] + errs[i]
	}
	return sections
}

// zkCliNoise are lines zkCli prints that are not the output of a command:
// logging setup and the connection's watch event.
var zkCliNoise = regexp.MustCompile(`^(SLF4J: .*|WATCHER::|WatchedEvent state:SyncConnected type:None path:null|)$`)

// splitMarked splits a stream at the marker lines marker(0) … marker(n)
// and returns the n sections between them, without zkCli's noise.
func splitMarked(t *testing.T, stream string, marker func(int) string, n int) []string {
	t.Helper()
	sections := make([]string, n)
	cur := -1
	for _, line := range strings.Split(stream, "\n") {
		if cur < n && line == marker(cur+1) {
			cur++
			continue
		}
		if cur < 0 || cur >= n || zkCliNoise.MatchString(line) {
			continue
		}
		sections[cur] += line + "\n"
	}
	if cur != n {
		t.Fatalf("zkCli output has %d of %d markers (%q); output:\n%s", cur+1, n+1, marker(cur+1), stream)
	}
	return sections
}

// runZkCli runs zkCli.sh against connect, with args (one command) or
// with stdin (a script), times in UTC.
func runZkCli(t *testing.T, cli, connect string, args []string, stdin string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, append([]string{"-server", connect}, args...)...)
	cmd.Env = append(os.Environ(), "TZ=UTC", "CLIENT_JVMFLAGS="+zkCliJVMFlags)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("zkCli %v: %v\n%v", args, err, r)
	}
	return r
}
