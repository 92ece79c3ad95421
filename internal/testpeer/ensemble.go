package testpeer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/coord/coordhealth"
)

// Ensemble is a quorum of Apache ZooKeeper servers on loopback, each a
// child JVM (QuorumPeerMain): what Shepherd runs against once it outgrows
// one machine. Tests use it to see what production sees — leader
// elections, a member's loss, clients moving between servers.
type Ensemble struct {
	// Members are the servers; member i has myid i+1. Kill, Stop and
	// Restart one through its own methods.
	Members []*ZooKeeper
}

// Quorum timing of an Ensemble, in ticks: how long a follower may take to
// connect and sync to a new leader, and to stay in sync. ZooKeeper's sample
// config uses 10 and 5; these are doubled, since the members share two busy
// cores with the test.
const (
	ensembleInitLimit = 20
	ensembleSyncLimit = 10
)

// ensembleStartTimeout is the default bound on a member's start: three JVMs
// starting at once on two busy cores, then an election and a sync (30 s was
// seen to run out with the machine's load average near 30).
const ensembleStartTimeout = 90 * time.Second

// StartEnsemble starts n members with opts (TickTime, ExtraConfig,
// SystemProperties and StartTimeout apply to each) and waits until every one serves, which
// needs a quorum: a leader elected and its followers synced. They are
// stopped when the test ends, and on failure their logs' tails printed.
func StartEnsemble(t testing.TB, n int, opts ZKOptions) *Ensemble {
	t.Helper()
	why, ok := ZooKeeperAvailable()
	Require(t, "Apache ZooKeeper", ok, why)
	if n < 1 {
		t.Fatalf("testpeer: an ensemble of %d members", n)
	}
	if opts.TickTime == 0 {
		opts.TickTime = DefaultTickTime
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = ensembleStartTimeout
	}
	// Three ports each: clients, followers to the leader, leader election.
	ports := make([][3]int, n)
	servers := map[string]string{
		"initLimit": strconv.Itoa(ensembleInitLimit),
		"syncLimit": strconv.Itoa(ensembleSyncLimit),
	}
	for i := range ports {
		for j := range ports[i] {
			ports[i][j] = FreePort(t)
		}
		servers["server."+strconv.Itoa(i+1)] = fmt.Sprintf("127.0.0.1:%d:%d", ports[i][1], ports[i][2])
	}
	e := &Ensemble{}
	for i := range n {
		member := opts
		member.ExtraConfig = maps.Clone(servers)
		maps.Copy(member.ExtraConfig, opts.ExtraConfig)
		z, err := prepareZooKeeper(t.TempDir(), ports[i][0], i+1, member)
		if err != nil {
			t.Fatal(err)
		}
		e.Members = append(e.Members, z)
	}
	t.Cleanup(func() {
		for _, z := range e.Members {
			if t.Failed() {
				t.Logf("ensemble member %d (%s) log tail:\n%s", z.myid, z.Addr(), z.LogTail(logTailLines))
			}
			if err := z.Stop(); err != nil {
				t.Errorf("stop ensemble member %d: %v", z.myid, err)
			}
		}
	})
	// Members only serve once a quorum has formed, so they start together.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, z := range e.Members {
		wg.Go(func() { errs[i] = z.start() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("testpeer: start an ensemble of %d: %v", n, err)
	}
	return e
}

// Connect is the connect string naming every member.
func (e *Ensemble) Connect() string {
	addrs := make([]string, len(e.Members))
	for i, z := range e.Members {
		addrs[i] = z.Addr()
	}
	return strings.Join(addrs, ",")
}

// Leader returns the index in Members of the member that says it leads,
// asking each running member with srvr.
func (e *Ensemble) Leader() (int, error) {
	var errs []error
	for i, z := range e.Members {
		if z.PID() == 0 {
			continue
		}
		ans, err := coordhealth.Ask(context.Background(), z.Addr(), "srvr")
		if err != nil {
			errs = append(errs, fmt.Errorf("member %d: %w", i+1, err))
			continue
		}
		if strings.Contains(ans, "Mode: leader") {
			return i, nil
		}
	}
	return -1, fmt.Errorf("testpeer: no member leads: %w", errors.Join(errs...))
}

// WaitLeader polls Leader until a member leads, failing the test after d.
func (e *Ensemble) WaitLeader(t testing.TB, d time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		i, err := e.Leader()
		if err == nil {
			return i
		}
		if time.Now().After(deadline) {
			t.Fatalf("ensemble: %v after %v", err, d)
		}
		time.Sleep(readyPoll)
	}
}
