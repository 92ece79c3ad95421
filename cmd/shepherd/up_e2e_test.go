package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// TestUpRunsReplicationAndJob: `shepherd up` started as a real process
// with examples/shepherd.yaml (its two ports changed to free ones) is a
// working installation: a cold-standby task of the example's group
// replicates one private MariaDB server to another until their checksums
// match, a job stored with ctl runs on its schedule, and both are done
// with the admin credential the server wrote at its first start, while a
// client without it can store no job. SIGTERM stops it cleanly.
func TestUpRunsReplicationAndJob(t *testing.T) {
	source, target := startShopPair(t)

	u := startUp(t, nil)
	bin, dir, zk, ctl, up := u.bin, u.dir, u.zk, u.ctl, u.cmd

	addOrdersTask(t, ctl, source, target)
	coordtest.WaitFor(t, 2*time.Minute, "task orders RUNNING in up's core", func() error {
		if out := ctl("task", "show", "orders"); !regexp.MustCompile(`(?m)^state:\s+RUNNING$`).MatchString(out) {
			return fmt.Errorf("task show:\n%s", out)
		}
		return nil
	})

	ranFile := filepath.Join(dir, "ran")
	ctl("job", "add", "--schedule", "@every 1s", "tick", "--", "sh", "-c", "echo ran >> "+ranFile)
	// The attacker: a client of up's server without the credential stores
	// a job. The write is refused (the scheduler's nodes are the
	// credential's), and were it not, the scheduler would refuse the job.
	pwned := filepath.Join(dir, "pwned")
	anon := exec.Command(bin, "ctl", "job", "add", "--schedule", "@every 1s", "pwn", "--", "sh", "-c", "echo pwned > "+pwned)
	anon.Env = append(os.Environ(), "SHEPHERD_ZK="+zk, "SHEPHERD_AUTH_FILE=", "SHEPHERD_AUTH=")
	if out, err := anon.CombinedOutput(); err == nil || !strings.Contains(string(out), "not authenticated") {
		t.Errorf("an anonymous ctl job add on up's server: %v, want a refusal (not authenticated):\n%s", err, out)
	}

	const rows = 500
	for i := 0; i < rows; i += 100 {
		var values []string
		for j := i; j < i+100; j++ {
			values = append(values, fmt.Sprintf("(%d, 'row-%d')", j, j))
		}
		source.Exec(t, "INSERT INTO shop.items VALUES "+strings.Join(values, ","))
	}
	coordtest.WaitFor(t, 2*time.Minute, "the target to have the source's rows", func() error {
		want, got := checksum(t, source), checksum(t, target)
		if got != want {
			return fmt.Errorf("CHECKSUM TABLE shop.items: source %d, target %d", want, got)
		}
		return nil
	})
	coordtest.WaitFor(t, time.Minute, "job tick to run", func() error {
		b, err := os.ReadFile(ranFile)
		if err != nil || !strings.Contains(string(b), "ran") {
			return fmt.Errorf("%s: %q, %v", ranFile, b, err)
		}
		return nil
	})

	if _, err := os.Stat(pwned); !os.IsNotExist(err) {
		t.Errorf("the anonymous client's job ran (%s: %v)", pwned, err)
	}
	if err := up.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- up.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("shepherd up after SIGTERM: %v, want exit status 0", err)
		}
	case <-time.After(time.Minute): // liveness bound only
		t.Fatal("shepherd up still running a minute after SIGTERM")
	}
}

// TestUpFreshnessGate: a job gated on a replication task
// (after: task:orders) over a real MariaDB pair, with `shepherd up`
// running the task's core, the monitor that samples its source and the
// scheduler. Rows are written while the task is stopped, then a run is
// asked for a time after them: it waits, saying the task is STOPPED,
// until the task is started and its target holds those rows — the job
// counts them in the target at its start and must see every one — and
// its result records the position reached.
func TestUpFreshnessGate(t *testing.T) {
	source, target := startShopPair(t)
	u := startUp(t, func(cfg string) string {
		return strings.Replace(cfg, "interval: 15s", "interval: 1s", 1) // the monitor samples sources each second
	})
	ctl := u.ctl
	addOrdersTask(t, ctl, source, target)
	state := func(want string) {
		t.Helper()
		coordtest.WaitFor(t, 2*time.Minute, "task orders "+want, func() error {
			if out := ctl("task", "show", "orders"); !regexp.MustCompile(`(?m)^state:\s+` + want + `$`).MatchString(out) {
				return fmt.Errorf("task show:\n%s", out)
			}
			return nil
		})
	}
	state("RUNNING")
	ctl("task", "stop", "orders")
	state("STOPPED")

	const rows = 300
	for i := 0; i < rows; i += 100 {
		var values []string
		for j := i; j < i+100; j++ {
			values = append(values, fmt.Sprintf("(%d, 'row-%d')", j, j))
		}
		source.Exec(t, "INSERT INTO shop.items VALUES "+strings.Join(values, ","))
	}
	// A run key after the inserts: the gate's goal holds all of them.
	key := time.Now().UTC().Truncate(time.Second).Add(time.Second).Format(scheduler.RunKeyLayout)
	count := fmt.Sprintf(`n=$(mariadb -h 127.0.0.1 -P %d -u root -N -B -e 'SELECT COUNT(*) FROM shop.items') && echo "$n" && printf %%s "$n" > "$SHEPHERD_RESULT_FILE"`, target.Port())
	ctl("job", "add", "--schedule", "@yearly", "--after", "task:orders", "report", "--", "sh", "-c", count)
	ctl("job", "run-now", "--run-key", key, "report")
	coordtest.WaitFor(t, 2*time.Minute, "run "+key+" waiting for the stopped task, with a goal", func() error {
		out := ctl("job", "show", "report")
		if !strings.Contains(out, "waiting for mariadb-bin") && !strings.Contains(out, "waiting for mysql-bin") || !strings.Contains(out, "task is STOPPED") {
			return fmt.Errorf("job show:\n%s", out)
		}
		t.Logf("job show, waiting:\n%s", out)
		return nil
	})
	if got := countRows(t, target); got != 0 {
		t.Fatalf("the stopped task's target has %d rows", got)
	}
	coordtest.WaitFor(t, 2*time.Minute, "the monitor's JobWaitingOnTask alert", func() error {
		if out := ctl("alert", "list"); !regexp.MustCompile(`(?m)^JobWaitingOnTask\s.*firing`).MatchString(out) {
			return fmt.Errorf("alert list:\n%s", out)
		}
		return nil
	})
	ctl("task", "start", "orders")
	var js scheduler.JobStatus
	coordtest.WaitFor(t, 2*time.Minute, "run "+key+" to end", func() error {
		js = scheduler.JobStatus{}
		if err := json.Unmarshal([]byte(ctl("--json", "job", "show", "report")), &js); err != nil {
			return err
		}
		if ri := js.Run(key); ri == nil || ri.Result == nil {
			return fmt.Errorf("runs %+v", js.Runs)
		}
		return nil
	})
	res := js.Run(key).Result
	if res.Status != scheduler.Succeeded || string(res.Data) != fmt.Sprint(rows) {
		t.Errorf("run %s: %s %q (%s), want succeeded having seen all %d rows in the target", key, res.Status, res.Data, res.Error, rows)
	}
	if len(res.Gates) != 1 || !res.Gates[0].Reached || res.Gates[0].Task != "orders" || res.Gates[0].Target == "" {
		t.Errorf("run %s gates %+v, want task orders reached, with its goal", key, res.Gates)
	}
}

// startShopPair starts a source and a target MariaDB, each with an empty
// table shop.items.
func startShopPair(t *testing.T) (source, target *testpeer.MariaDB) {
	source = testpeer.StartMariaDB(t, testpeer.MariaDBOptions{})
	target = testpeer.StartMariaDB(t, testpeer.MariaDBOptions{})
	schema := []string{"CREATE DATABASE shop", "CREATE TABLE shop.items (id INT PRIMARY KEY, v VARCHAR(40) NOT NULL)"}
	source.Exec(t, schema...)
	target.Exec(t, schema...)
	return source, target
}

// addOrdersTask adds task orders, shop.* from source to target in up's
// cold group, from the source's current position.
func addOrdersTask(t *testing.T, ctl func(...string) string, source, target *testpeer.MariaDB) {
	task := writeConfig(t, "task.yaml", fmt.Sprintf(`name: orders
source: {host: 127.0.0.1, port: %d, user: root, flavor: mariadb}
target: {host: 127.0.0.1, port: %d, user: root, flavor: mariadb}
filter: {include: [shop.*]}
standby: {mode: cold, group: default}
start: current
`, source.Port(), target.Port()))
	ctl("task", "add", "-f", task)
}

// countRows is SELECT COUNT(*) FROM shop.items.
func countRows(t *testing.T, m *testpeer.MariaDB) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	if err := m.DB(t).QueryRowContext(ctx, "SELECT COUNT(*) FROM shop.items").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// upInstall is a `shepherd up` started by startUp, and ctl against it
// with the admin credential.
type upInstall struct {
	bin, dir, zk, data, console string
	cmd                         *exec.Cmd
	ctl                         func(args ...string) string
}

// startUp starts `shepherd up` as a real process with
// examples/shepherd.yaml, its ports changed to free ones and then edited
// by edit (if not nil), and waits until it serves.
func startUp(t *testing.T, edit func(cfg string) string) upInstall {
	t.Helper()
	bin := buildShepherd(t)
	dir := t.TempDir()
	example, err := os.ReadFile(repoFile("examples/shepherd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	zk := fmt.Sprintf("127.0.0.1:%d", testpeer.FreePort(t))
	web := fmt.Sprintf("127.0.0.1:%d", testpeer.FreePort(t))
	console := fmt.Sprintf("127.0.0.1:%d", testpeer.FreePort(t))
	dnsAddr := fmt.Sprintf("127.0.0.1:%d", testpeer.FreePort(t))
	cfg := string(example)
	for from, to := range map[string]string{"127.0.0.1:2181": zk, "127.0.0.1:9180": web, "127.0.0.1:8080": console, "127.0.0.1:5353": dnsAddr} {
		if !strings.Contains(cfg, from) {
			t.Fatalf("examples/shepherd.yaml has no %s to replace", from)
		}
		cfg = strings.ReplaceAll(cfg, from, to)
	}
	if edit != nil {
		cfg = edit(cfg)
	}
	cfgPath := writeConfig(t, "shepherd.yaml", cfg)
	data := filepath.Join(dir, "data")
	up := startProcess(t, bin, "up", "--config", cfgPath, "--data-dir", data)
	waitHTTP(t, "http://"+web+"/health", "coord: ok", "session: ok")
	// One listener: the server's metrics and every role's.
	waitHTTP(t, "http://"+web+"/metrics", "shepherd_coord_znodes", "shepherd_core_", "shepherd_scheduler_", "process_cpu_seconds_total")
	waitHTTP(t, "http://"+web+"/commands/srvr", "Zookeeper version")
	// The console, on the same session.
	waitHTTP(t, "http://"+console+"/health", `"status":"ok"`)
	// up made the first admin, with a random password only its user may read.
	pwFile := filepath.Join(data, "console-admin.password")
	if fi, err := os.Stat(pwFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("first console login file %s: %v, %v; want mode 0600", pwFile, fi, err)
	}
	pw, err := os.ReadFile(pwFile)
	if err != nil {
		t.Fatal(err)
	}
	login := fmt.Sprintf(`{"user":"admin","password":%q}`, strings.TrimSpace(string(pw)))
	res, err := http.Post("http://"+console+"/login", "application/json", strings.NewReader(login))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("console login as admin with the password up wrote: %s", res.Status)
	}

	authFile := filepath.Join(data, "coord", "admin.auth")
	ctl := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"ctl"}, args...)...)
		cmd.Env = append(os.Environ(), "SHEPHERD_ZK="+zk, "SHEPHERD_AUTH_FILE="+authFile)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("shepherd ctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	return upInstall{bin: bin, dir: dir, zk: zk, data: data, console: console, cmd: up, ctl: ctl}
}

// checksum is the source's or target's CHECKSUM TABLE shop.items.
func checksum(t *testing.T, m *testpeer.MariaDB) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var name string
	var sum int64
	if err := m.DB(t).QueryRowContext(ctx, "CHECKSUM TABLE shop.items").Scan(&name, &sum); err != nil {
		t.Fatal(err)
	}
	return sum
}
