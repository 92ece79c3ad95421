package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/duration"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// BenchmarkMySQLFailover measures hot-standby failover: a `shepherd core`
// process RUNNING a task is killed with SIGKILL while the source is
// written to, and the time is taken until the STANDBY process applies —
// its first commit to the target. Each iteration kills the current owner
// and starts a new standby. The session timeout bounds it from below:
// the server expires the dead core's session only then.
//
//	go test -run '^$' -bench BenchmarkMySQLFailover -benchtime 5x ./core/
//
// The hand-over sub-benchmarks stop the owner with SIGTERM instead: it
// stops applying, writes lastCommit and deletes its instance node, and the
// standby takes over at once, whatever the session timeout.
func BenchmarkMySQLFailover(b *testing.B) {
	for _, tg := range targets {
		for _, timeout := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
			b.Run(fmt.Sprintf("%s/kill/session=%v", tg.Name, timeout), func(b *testing.B) {
				tg.Require(b)
				benchFailover(b, tg, timeout, (*coreProc).kill9)
			})
		}
		b.Run(fmt.Sprintf("%s/handover/session=%v", tg.Name, coreSessionTimeout), func(b *testing.B) {
			tg.Require(b)
			benchFailover(b, tg, coreSessionTimeout, (*coreProc).stop)
		})
	}
	// Source failover does not depend on the coordination server.
	for _, after := range []time.Duration{time.Second, 5 * time.Second} {
		b.Run(fmt.Sprintf("source/kill/failoverAfter=%v", after), func(b *testing.B) {
			targets[0].Require(b)
			benchSourceFailover(b, targets[0], after)
		})
	}
}

// benchSourceFailover measures source failover: the primary a task reads
// is killed with SIGKILL (after a trickle of writes its GTID replica has
// caught up with), the replica — a source candidate — is promoted at
// once, as an orchestrator would, and writes go on there; the time is
// taken from the kill until the target has the first row written on the
// replica: failoverAfter, the probe that notices, the switch and the
// resume by GTID. Each iteration has a primary and a replica of its own.
func benchSourceFailover(b *testing.B, tg *target, after time.Duration) {
	_, target := sharedMariaDB(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	connect := chrootOf(b, tg)
	a := NewAdmin(dial(b, connect, testSessionTimeout), "")
	var took []time.Duration
	trickle := func(ctx context.Context, m *testpeer.MariaDB, db string, from int) <-chan error {
		done := make(chan error, 1)
		go func() {
			for id := from; ; id += 10 {
				if err := load(ctx, m.DB(b), db, id, 10, 10); err != nil {
					done <- err
					return
				}
				select {
				case <-ctx.Done():
					done <- nil
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		return done
	}
	b.StopTimer()
	for i := range b.N {
		args := []string{"--log-slave-updates"}
		primary := testpeer.StartMariaDB(b, testpeer.MariaDBOptions{GTIDStrictMode: true, ExtraArgs: args})
		replica := testpeer.StartMariaDB(b, testpeer.MariaDBOptions{GTIDStrictMode: true, ExtraArgs: args})
		gtidReplica(b, replica, primary)
		db := testDB("srcbench")
		createWorkloadSchema(b, db, primary, target)
		task := "srcbench_" + db
		sp := mysqlSpec(task, db, primary, target)
		sp.Source.Hosts, sp.Source.FailoverAfter = []string{replica.Addr()}, duration.Duration(after)
		mustAdd(b, a, sp)
		c := startCoreProc(b, connect, fmt.Sprintf("s%d", i), "--task", task)
		waitOwner(b, a, task, c.host, StateRunning, 30*time.Second)
		loadCtx, stopLoad := context.WithCancel(ctx)
		loaded := trickle(loadCtx, primary, db, 0)
		coordtest.WaitFor(b, 30*time.Second, "the task to apply", func() error {
			var n int
			if err := target.DB(b).QueryRowContext(ctx, "SELECT COUNT(*) FROM "+db+".items").Scan(&n); err != nil || n < 100 {
				return fmt.Errorf("%d rows, %v", n, err)
			}
			return nil
		})

		// The writes stop and the replica catches up first: a primary
		// killed mid-stream may take a transaction the target applied and
		// no replica received, and then no candidate can take over (see
		// TestMySQLSourceFailoverKill9). This measures the switch.
		stopLoad()
		if err := <-loaded; err != nil && !errors.Is(err, context.Canceled) {
			b.Fatal(err)
		}
		loadCtx, stopLoad = context.WithCancel(ctx)
		coordtest.WaitFor(b, 30*time.Second, "the replica to catch up", func() error {
			// Read both each time: a write cancelled mid-flight may still
			// commit on the primary.
			var want, got string
			if err := primary.DB(b).QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&want); err != nil {
				return err
			}
			if err := replica.DB(b).QueryRowContext(ctx, "SELECT @@gtid_slave_pos").Scan(&got); err != nil || got != want {
				return fmt.Errorf("replica at %q, primary at %q (%v)", got, want, err)
			}
			return nil
		})
		b.StartTimer()
		killed := time.Now()
		primary.Kill()
		replica.Exec(b, "STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only = OFF")
		const first = 1_000_000 // the replica's ids
		loaded = trickle(loadCtx, replica, db, first)
		coordtest.WaitFor(b, 2*time.Minute, "a row written on the replica", func() error {
			var n int
			if err := target.DB(b).QueryRowContext(ctx, "SELECT COUNT(*) FROM "+db+".items WHERE id >= ?", first).Scan(&n); err != nil || n == 0 {
				return fmt.Errorf("%d rows, %v", n, err)
			}
			return nil
		})
		took = append(took, time.Since(killed))
		b.StopTimer()
		stopLoad()
		if err := <-loaded; err != nil && !errors.Is(err, context.Canceled) {
			b.Fatal(err)
		}
		waitSameTables(b, replica, target, db, 90*time.Second)
		c.stop()
	}
	b.ReportMetric(ms(median(took)), "source-failover-ms")
	b.ReportMetric(ms(slices.Max(took)), "max-source-failover-ms")
	b.Logf("failoverAfter %v: %d source failovers; from the primary's SIGKILL to the first row from the replica %v (median), %v (max)",
		after, len(took), median(took).Round(time.Millisecond), slices.Max(took).Round(time.Millisecond))
}

func benchFailover(b *testing.B, tg *target, timeout time.Duration, end func(*coreProc)) {
	source, target := sharedMariaDB(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	connect := chrootOf(b, tg)
	a := NewAdmin(dial(b, connect, testSessionTimeout), "")
	db := testDB("bench")
	createWorkloadSchema(b, db, source, target)
	task := "bench_" + db
	mustAdd(b, a, mysqlSpec(task, db, source, target))

	n := 0
	start := func() *coreProc {
		n++
		return startCoreProc(b, connect, fmt.Sprintf("c%d", n), "--task", task, "--session-timeout", timeout.String())
	}
	standsBy := func(host string) {
		coordtest.WaitFor(b, 30*time.Second, host+" to stand by", func() error {
			ts, err := a.Task(ctx, task)
			if err != nil || len(ts.Instances) != 2 || ts.Instances[1].State.Host != host || ts.Instances[1].State.State != StateStandby {
				return fmt.Errorf("instances %v, %v", instanceNames(ts), err)
			}
			return nil
		})
	}
	owner := start()
	waitOwner(b, a, task, owner.host, StateRunning, 30*time.Second)
	standby := start()
	standsBy(standby.host)

	// A steady trickle of source transactions, so that "applying" shows
	// as the checkpoint moving.
	loadCtx, stopLoad := context.WithCancel(ctx)
	loaded := make(chan error, 1)
	go func() {
		id := 0
		for {
			if err := load(loadCtx, source.DB(b), db, id, 10, 10); err != nil {
				loaded <- err
				return
			}
			id += 10
			select {
			case <-loadCtx.Done():
				loaded <- nil
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()

	var claims, applies []time.Duration
	b.ResetTimer()
	for range b.N {
		killed := time.Now()
		end(owner)
		var claimed time.Duration
		var claimPos uint64
		coordtest.WaitFor(b, 60*time.Second, standby.host+" to apply", func() error {
			who, _, pos, err := targetCheckpoint(ctx, target.DB(b), task)
			if err != nil || !strings.HasPrefix(who, standby.host+"-") {
				return fmt.Errorf("checkpoint owner %q, %v", who, err)
			}
			if claimed == 0 {
				claimed, claimPos = time.Since(killed), pos
			}
			if pos == claimPos {
				return errors.New("claimed, not applied yet")
			}
			return nil
		})
		claims, applies = append(claims, claimed), append(applies, time.Since(killed))
		b.StopTimer()
		owner, standby = standby, start()
		standsBy(standby.host)
		b.StartTimer()
	}
	b.StopTimer()
	stopLoad()
	if err := <-loaded; err != nil && !errors.Is(err, context.Canceled) {
		b.Fatal(err)
	}
	waitSameTables(b, source, target, db, 90*time.Second)
	b.ReportMetric(ms(median(claims)), "claim-ms")
	b.ReportMetric(ms(median(applies)), "apply-ms")
	b.ReportMetric(ms(slices.Max(applies)), "max-apply-ms")
	b.Logf("%s, session timeout %v: %d failovers; from the owner's end to the claim %v, to the first commit %v (medians)",
		tg.Name, timeout, len(applies), median(claims).Round(time.Millisecond), median(applies).Round(time.Millisecond))
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
