package main

import (
	"context"
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
)

// TestUpRunsReplicationAndJob: `shepherd up` started as a real process
// with examples/shepherd.yaml (its two ports changed to free ones) is a
// working installation: a cold-standby task of the example's group
// replicates one private MariaDB server to another until their checksums
// match, a job stored with ctl runs on its schedule, and both are done
// with the admin credential the server wrote at its first start, while a
// client without it can store no job. SIGTERM stops it cleanly.
func TestUpRunsReplicationAndJob(t *testing.T) {
	source := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{})
	target := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{})
	schema := []string{"CREATE DATABASE shop", "CREATE TABLE shop.items (id INT PRIMARY KEY, v VARCHAR(40) NOT NULL)"}
	source.Exec(t, schema...)
	target.Exec(t, schema...)

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

	task := writeConfig(t, "task.yaml", fmt.Sprintf(`name: orders
source: {host: 127.0.0.1, port: %d, user: root, flavor: mariadb}
target: {host: 127.0.0.1, port: %d, user: root, flavor: mariadb}
filter: {include: [shop.*]}
standby: {mode: cold, group: default}
start: current
`, source.Port(), target.Port()))
	ctl("task", "add", "-f", task)
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
