package scheduler

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
)

// startChild runs a scheduler as a separate process (this test binary,
// in child mode) so that it can be killed with SIGKILL.
func startChild(t *testing.T, c childConfig) *exec.Cmd {
	t.Helper()
	conf, _ := json.Marshal(c)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+string(conf))
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(stderr.Name())
			t.Logf("scheduler %s stderr:\n%s", c.Host, b)
		}
		stderr.Close()
	})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ready <- sc.Scan() && sc.Text() == "ready"
		for sc.Scan() {
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("scheduler %s did not start", c.Host)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("scheduler %s not ready within 20s", c.Host)
	}
	return cmd
}

// TestMasterKilledMidRun kills -9 the master of a run while its command
// runs: another scheduler takes the run over, and its result says
// attempt 2 (or later, if a loaded machine let another session expire),
// each attempt having run once.
func TestMasterKilledMidRun(t *testing.T) {
	onEachTarget(t, func(t *testing.T, connect string) {
		dir := t.TempDir()
		out := filepath.Join(dir, "effects")
		jobs := fmt.Sprintf(`jobs:
- name: batch
  schedule: "@yearly"
  command: sh
  args: ["-c", "echo \"$SHEPHERD_RUN_KEY $SHEPHERD_ATTEMPT\" >> %s; exec sleep 2"]
`, out)
		pids := map[int]string{}
		for i := range 3 {
			host := fmt.Sprintf("s%d", i)
			cmd := startChild(t, childConfig{Connect: connect, Jobs: jobs, Host: host, LogDir: filepath.Join(dir, host)})
			pids[cmd.Process.Pid] = host
		}
		obs := dial(t, connect)
		key := trigger(t, obs, "batch")
		var master struct {
			Host string `json:"host"`
			PID  int    `json:"pid"`
		}
		coordtest.WaitFor(t, 20*time.Second, "condition", func() error {
			data, _, err := obs.Get(context.Background(), BindingPath("batch", key))
			if err != nil {
				return err
			}
			if err := json.Unmarshal(data, &master); err != nil {
				return err
			}
			if len(lines(t, out)) == 0 {
				return fmt.Errorf("the command has not started")
			}
			return nil
		})
		if _, ok := pids[master.PID]; !ok {
			t.Fatalf("binding names pid %d, not one of the schedulers %v", master.PID, pids)
		}
		if err := syscall.Kill(master.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		var r Result
		coordtest.WaitFor(t, 30*time.Second, "condition", func() error {
			got, ok, err := readResult(context.Background(), obs, "batch", key)
			if err != nil || !ok {
				return fmt.Errorf("no result yet (%v)", err)
			}
			r = got
			return nil
		})
		// Attempt 2 is the takeover. A machine loaded enough to let a
		// live scheduler's session expire makes more; each attempt still
		// runs once, and the result counts them.
		if r.Status != Succeeded || r.Attempt < 2 || r.Host == master.Host {
			t.Errorf("result %+v: want succeeded at attempt 2 or later on a scheduler other than %s", r, master.Host)
		}
		var want []string
		for a := 1; a <= r.Attempt; a++ {
			want = append(want, fmt.Sprintf("%s_%d", key, a))
		}
		if got := lines(t, out); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("effects %q, want %q: each attempt once, up to the result's", got, want)
		}
	})
}
