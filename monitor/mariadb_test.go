package monitor

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/coord/recipe"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// currentBinlog returns the source's newest binary log.
func currentBinlog(t *testing.T, db *sql.DB) string {
	t.Helper()
	var file string
	var pos int64
	var doDB, ignoreDB sql.NullString
	if err := db.QueryRow("SHOW MASTER STATUS").Scan(&file, &pos, &doDB, &ignoreDB); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestSourceRulesAgainstMariaDB runs a real task between two private
// mariadbd servers. Caught up with an idle source it is not late; with
// its core stopped while the source moves on it is (ReplicationLag),
// until a core catches up. A row the target refuses fails the task
// (TaskFailed) until fixed and retried; a lock on the target holds its
// checkpoint while the source moves (CheckpointStale). Then, the task stopped, the source's binary
// logs are worked: the monitor warns when the file the checkpoint needs
// may expire (binlog_expire_logs_seconds lowered), says it is gone once
// PURGE BINARY LOGS removes it, and resolves both — each notification
// once.
func TestSourceRulesAgainstMariaDB(t *testing.T) {
	why, ok := testpeer.MariaDBAvailable()
	testpeer.Require(t, "MariaDB", ok, why)
	tg := targets[0] // the rules do not depend on the coordination server
	tg.Require(t)
	source := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{})
	target := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{})
	src := source.DB(t)
	source.Exec(t, "CREATE DATABASE shop", "CREATE TABLE shop.items (id INT PRIMARY KEY)", "FLUSH BINARY LOGS")
	target.Exec(t, "CREATE DATABASE shop", "CREATE TABLE shop.items (id INT PRIMARY KEY)")
	needed := currentBinlog(t, src) // the file the checkpoint will be in

	connect := tg.Addr + "/" + fmt.Sprintf("mariadb-%d", time.Now().UnixNano())
	s := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := core.NewAdmin(s, "")
	sp := &core.Spec{
		Name:   "shop",
		Source: core.SourceEndpoint{Endpoint: core.Endpoint{Host: source.Host(), Port: source.Port(), User: "root", Flavor: core.FlavorMariaDB}},
		Target: core.TargetEndpoint{Endpoint: core.Endpoint{Host: target.Host(), Port: target.Port(), User: "root", Flavor: core.FlavorMariaDB}},
		Filter: core.Filter{Include: []string{"shop.*"}},
		Start:  core.StartCurrent, State: core.DesiredRunning, Version: core.SpecVersion,
		Standby: core.Standby{Mode: core.ModeHot},
	}
	if err := admin.AddTask(ctx, sp, false); err != nil {
		t.Fatal(err)
	}
	// The core runs the task until it has a checkpoint in `needed`.
	runCore := func() (stop func()) {
		cctx, stopCore := context.WithCancel(ctx)
		c, err := core.New(dial(t, connect, recipe.Options{Auth: coordtest.Auth}), core.Config{Host: "c1", Tasks: []string{"shop"}, Engine: core.MySQL{},
			CheckpointInterval: 100 * time.Millisecond, Logger: coordtest.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() { _ = c.Run(cctx) })
		return func() { stopCore(); wg.Wait() }
	}
	stopCore := runCore()
	source.Exec(t, "INSERT INTO shop.items VALUES (1)")
	coordtest.WaitFor(t, time.Minute, "a checkpoint in "+needed, func() error {
		ts, err := admin.Task(ctx, "shop")
		if err != nil || ts.LastCommit == nil || ts.LastCommit.File != needed || ts.LastCommit.Pos <= 4 {
			return fmt.Errorf("lastCommit %+v, %v", ts.LastCommit, err)
		}
		return nil
	})

	r := newReceiver(t)
	cfg := testConfig(r)
	cfg.Rules.LagWarning, cfg.Rules.LagCritical = time.Second, time.Hour
	cfg.Rules.CheckpointStale = 2 * time.Second
	m, _ := startMonitor(t, s, startPoller(t, s, cluster.Options{}), cfg, Deps{})
	// An idle source: its last event ages, the task is not late.
	waitEvaluations(t, m, 25) // 2.5s: past the 1s lag threshold
	if n := len(r.all()); n != 0 {
		t.Fatalf("task caught up with an idle source: sent %+v", r.all())
	}
	// The core stops; the source moves on: the task is late.
	stopCore()
	source.Exec(t, "INSERT INTO shop.items VALUES (2)")
	r.waitCount(t, RuleReplicationLag, StatusFiring, 1)
	// Back, it catches up.
	stopCore = runCore()
	r.waitCount(t, RuleReplicationLag, StatusResolved, 1)

	// A row of a table the target lacks (created on the source outside
	// the binary log): the target refuses it, the task fails.
	conn, err := src.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SET SESSION sql_log_bin = 0", "CREATE TABLE shop.extra (id INT PRIMARY KEY)", "SET SESSION sql_log_bin = 1", "INSERT INTO shop.extra VALUES (1)"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	conn.Close()
	r.waitCount(t, RuleTaskFailed, StatusFiring, 1)
	// Fixed and retried (ctl task start): resolved.
	target.Exec(t, "CREATE TABLE shop.extra (id INT PRIMARY KEY)")
	if err := admin.SetState(ctx, "shop", core.DesiredRunning); err != nil {
		t.Fatal(err)
	}
	r.waitCount(t, RuleTaskFailed, StatusResolved, 1)

	// A core stuck on a lock of the target: its checkpoint stays while the
	// source moves on (CheckpointStale, and it is late), until the lock
	// goes.
	lock, err := target.DB(t).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(ctx, "LOCK TABLES shop.items WRITE"); err != nil {
		t.Fatal(err)
	}
	source.Exec(t, "INSERT INTO shop.items VALUES (10)")
	r.waitCount(t, RuleCheckpointStale, StatusFiring, 1)
	r.waitCount(t, RuleReplicationLag, StatusFiring, 2)
	if _, err := lock.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
		t.Fatal(err)
	}
	lock.Close()
	r.waitCount(t, RuleCheckpointStale, StatusResolved, 1)
	r.waitCount(t, RuleReplicationLag, StatusResolved, 2)

	if err := admin.SetState(ctx, "shop", core.DesiredStopped); err != nil {
		t.Fatal(err)
	}
	stopCore()

	// The source moves on to the next file; with no expiry nothing is at
	// risk (the needed file is not the oldest).
	source.Exec(t, "INSERT INTO shop.items VALUES (3)", "FLUSH BINARY LOGS", "SET GLOBAL binlog_expire_logs_seconds = 0", "SET GLOBAL expire_logs_days = 0")
	waitEvaluations(t, m, 5)
	if n := len(r.all()); n != 8 {
		t.Fatalf("nothing at risk yet, sent %+v", r.all())
	}

	// An hour's expiry leaves the file less than the 24h window: the
	// monitor warns.
	source.Exec(t, "SET GLOBAL binlog_expire_logs_seconds = 3600")
	r.waitCount(t, RuleBinlogPurgeRisk, StatusFiring, 1)

	// Purged: the warning resolves, BinlogPurged fires.
	// (MariaDB skips a file a dump thread still reads: the stopped core's
	// may linger a moment.)
	coordtest.WaitFor(t, 30*time.Second, "PURGE BINARY LOGS to remove "+needed, func() error {
		source.Exec(t, fmt.Sprintf("PURGE BINARY LOGS TO '%s'", currentBinlog(t, src)))
		r := ReadSource(ctx, sp.Source.Endpoint, "", time.Now())
		if r.Err != "" || r.Has(needed) {
			return fmt.Errorf("binary logs %+v %s", r.Logs, r.Err)
		}
		if want := fmt.Sprintf("mariadb:%d", source.ServerID()); r.Server != want || r.Current().Server != want {
			t.Fatalf("reading of server %q (current %v), want %q: the name checkpoints give it", r.Server, r.Current(), want)
		}
		return nil
	})
	r.waitCount(t, RuleBinlogPurged, StatusFiring, 1)
	r.waitCount(t, RuleBinlogPurgeRisk, StatusResolved, 1)
	// The operator recreates the task: resolved.
	if err := admin.RemoveTask(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	r.waitCount(t, RuleBinlogPurged, StatusResolved, 1)
	waitEvaluations(t, m, 3)
	want := map[string]int{RuleReplicationLag: 2, RuleTaskFailed: 1, RuleCheckpointStale: 1, RuleBinlogPurgeRisk: 1, RuleBinlogPurged: 1}
	total := 0
	for rule, n := range want {
		for _, st := range []string{StatusFiring, StatusResolved} {
			if got := r.count(rule, st); got != n {
				t.Errorf("%s %s sent %d times, want %d", rule, st, got, n)
			}
		}
		total += 2 * n
	}
	if n := len(r.all()); n != total {
		t.Fatalf("%d notifications, want %d: %+v", n, total, r.all())
	}
}

// TestSourceFailoverUnsafeAgainstMariaDB: a task reads a primary with two
// replicas as source candidates, one without log_slave_updates, the other
// with its replication stopped while the primary moves on. Neither could
// take over (SourceFailoverUnsafe) until the second catches up; each
// notification once.
func TestSourceFailoverUnsafeAgainstMariaDB(t *testing.T) {
	why, ok := testpeer.MariaDBAvailable()
	testpeer.Require(t, "MariaDB", ok, why)
	tg := targets[0] // the rule does not depend on the coordination server
	tg.Require(t)
	primary := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{})
	noUpdates := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{})
	behind := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{ExtraArgs: []string{"--log-slave-updates"}})
	target := testpeer.StartMariaDB(t, testpeer.MariaDBOptions{})
	follow := fmt.Sprintf("CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = %d, MASTER_USER = 'root', MASTER_PASSWORD = '', MASTER_USE_GTID = slave_pos", primary.Port())
	noUpdates.Exec(t, follow, "START SLAVE")
	behind.Exec(t, follow) // not started: it falls behind
	primary.Exec(t, "CREATE DATABASE shop", "CREATE TABLE shop.items (id INT PRIMARY KEY)")
	target.Exec(t, "CREATE DATABASE shop", "CREATE TABLE shop.items (id INT PRIMARY KEY)")

	connect := tg.Addr + "/" + fmt.Sprintf("failover-unsafe-%d", time.Now().UnixNano())
	s := dial(t, connect, recipe.Options{Auth: coordtest.Auth})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := core.NewAdmin(s, "")
	sp := &core.Spec{
		Name: "shop",
		Source: core.SourceEndpoint{Endpoint: core.Endpoint{Host: primary.Host(), Port: primary.Port(), User: "root", Flavor: core.FlavorMariaDB},
			Hosts: []string{noUpdates.Addr(), behind.Addr()}},
		Target: core.TargetEndpoint{Endpoint: core.Endpoint{Host: target.Host(), Port: target.Port(), User: "root", Flavor: core.FlavorMariaDB}},
		Filter: core.Filter{Include: []string{"shop.*"}},
		Start:  core.StartCurrent, State: core.DesiredRunning, Version: core.SpecVersion,
		Standby: core.Standby{Mode: core.ModeHot},
	}
	if err := admin.AddTask(ctx, sp, false); err != nil {
		t.Fatal(err)
	}
	c, err := core.New(dial(t, connect, recipe.Options{Auth: coordtest.Auth}), core.Config{Host: "c1", Tasks: []string{"shop"}, Engine: core.MySQL{},
		CheckpointInterval: 100 * time.Millisecond, Logger: coordtest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	cctx, stopCore := context.WithCancel(ctx)
	wg.Go(func() { _ = c.Run(cctx) })
	defer func() { stopCore(); wg.Wait() }()
	primary.Exec(t, "INSERT INTO shop.items VALUES (1), (2)")
	coordtest.WaitFor(t, time.Minute, "a checkpoint with a GTID", func() error {
		ts, err := admin.Task(ctx, "shop")
		if err != nil || ts.LastCommit == nil || ts.LastCommit.GTID == "" || ts.LastCommit.Pos <= 4 {
			return fmt.Errorf("lastCommit %+v, %v", ts.LastCommit, err)
		}
		return nil
	})

	r := newReceiver(t)
	cfg := testConfig(r)
	cfg.Hold = map[string]time.Duration{RuleSourceFailoverUnsafe: 300 * time.Millisecond}
	startMonitor(t, s, startPoller(t, s, cluster.Options{}), cfg, Deps{})
	r.waitCount(t, RuleSourceFailoverUnsafe, StatusFiring, 1)
	var summary string
	for _, n := range r.all() {
		if n.Rule == RuleSourceFailoverUnsafe {
			summary = n.Summary
		}
	}
	for _, want := range []string{noUpdates.Addr() + " has log_slave_updates off", behind.Addr() + " has GTID state"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary %q does not say %q", summary, want)
		}
	}
	behind.Exec(t, "START SLAVE") // it catches up: a failover would be exact
	r.waitCount(t, RuleSourceFailoverUnsafe, StatusResolved, 1)
	if n := r.count(RuleSourceFailoverUnsafe, StatusFiring); n != 1 {
		t.Fatalf("fired %d times, want once", n)
	}
}
