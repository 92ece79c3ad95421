package recipe

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/internal/coordtest"
	"github.com/shepherd-dev/shepherd/internal/testpeer"
)

// The jars of Debian's Curator packages (libcurator-recipes-java,
// libcurator-framework-java, libcurator-client-java) and what they need.
var curatorJars = []string{
	"curator-recipes.jar", "curator-framework.jar", "curator-client.jar",
	"zookeeper.jar", "zookeeper-jute.jar", "guava.jar", "slf4j-api.jar", "slf4j-nop.jar",
}

// curatorPeer compiles testdata/CuratorPeer.java and starts it against
// connect. A missing JDK or Curator skips the test, or fails it under
// SHEPHERD_IT=1.
func curatorPeer(t *testing.T, classes, connect string) *linePeer {
	t.Helper()
	cp := []string{classes}
	for _, j := range curatorJars {
		cp = append(cp, filepath.Join("/usr/share/java", j))
	}
	cmd := exec.Command("java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-cp", strings.Join(cp, ":"), "CuratorPeer", connect)
	return startPeer(t, "curator", cmd)
}

func compileCuratorPeer(t *testing.T) string {
	t.Helper()
	_, errJavac := exec.LookPath("javac")
	testpeer.Require(t, "a JDK (javac)", errJavac == nil, fmt.Sprint(errJavac))
	for _, j := range curatorJars {
		_, err := os.Stat(filepath.Join("/usr/share/java", j))
		testpeer.Require(t, "Apache Curator (apt-get install libcurator-recipes-java)", err == nil, fmt.Sprint(err))
	}
	classes := t.TempDir()
	var cp []string
	for _, j := range curatorJars {
		cp = append(cp, filepath.Join("/usr/share/java", j))
	}
	out, err := exec.Command("javac", "-d", classes, "-cp", strings.Join(cp, ":"), filepath.Join("testdata", "CuratorPeer.java")).CombinedOutput()
	if err != nil {
		t.Fatalf("javac CuratorPeer.java: %v\n%s", err, out)
	}
	return classes
}

// TestCuratorInterop shares locks between Go and Apache Curator: a Go
// holder blocks a Java acquirer and vice versa, both queue in one order,
// and under contention they alternate without ever both being inside.
func TestCuratorInterop(t *testing.T) {
	classes := compileCuratorPeer(t)
	coordtest.OnEach(t, targets, func(t *testing.T, tg *coordtest.Target) {
		java := curatorPeer(t, classes, tg.Addr)
		s := dial(t, tg.Addr, Options{})
		ctx := coordtest.Context(t, 120*time.Second)

		t.Run("InterProcessMutex", func(t *testing.T) {
			lockHandoff(t, ctx, s, java, "Curator", NewMutex(s, testPath(t)), curatorLockNode)
		})

		t.Run("contention", func(t *testing.T) {
			p := testPath(t)
			lockContention(t, ctx, s, java, "Curator", NewMutex(s, p))
		})

		t.Run("InterProcessReadWriteLock", func(t *testing.T) {
			p := testPath(t)
			reader := NewRWMutex(s, p)
			writer := NewRWMutex(dial(t, tg.Addr, Options{}), p)
			if err := reader.RLock(ctx); err != nil {
				t.Fatal(err)
			}
			java.send("rlock %s", p)
			java.expect("rlocked", 10*time.Second) // readers share across implementations
			wDone := wlockAsync(ctx, writer)
			names := waitChildren(t, s, p, 3)
			for i, re := range []*regexp.Regexp{curatorReadNode, curatorReadNode, curatorWriteNode} {
				if !re.MatchString(names[i]) {
					t.Errorf("node %d %q does not have InterProcessReadWriteLock's shape", i, names[i])
				}
			}
			if err := reader.RUnlock(); err != nil {
				t.Fatal(err)
			}
			notYet(t, wDone, "Go writer while Curator reads")
			java.send("runlock")
			java.expect("runlocked", 10*time.Second)
			if err := recv(t, wDone, "Go writer"); err != nil {
				t.Fatal(err)
			}
			java.send("wlock %s", p)
			waitChildren(t, s, p, 2)
			java.quiet("the Go writer holds the lock")
			if err := writer.Unlock(); err != nil {
				t.Fatal(err)
			}
			java.expect("wlocked", 10*time.Second)
			rDone := rlockAsync(ctx, reader)
			waitChildren(t, s, p, 2)
			notYet(t, rDone, "Go reader while Curator writes")
			java.send("wunlock")
			java.expect("wunlocked", 10*time.Second)
			if err := recv(t, rDone, "Go reader"); err != nil {
				t.Fatal(err)
			}
			if err := reader.RUnlock(); err != nil {
				t.Fatal(err)
			}
		})

		t.Run("InterProcessSemaphoreV2", func(t *testing.T) {
			p := testPath(t)
			java.send("lease %s 1", p)
			leased := java.expect("leased ", 10*time.Second)
			if name := strings.TrimPrefix(leased, "leased "); !curatorLeaseNode.MatchString(name) {
				t.Errorf("Curator's lease node %q does not match %v", name, curatorLeaseNode)
			}
			got, errs := acquireAsync(ctx, NewSemaphore(s, p, 1))
			waitChildren(t, s, p+"/leases", 2)
			select {
			case <-got:
				t.Fatal("Go got a lease while Curator holds the only one")
			case err := <-errs:
				t.Fatal(err)
			case <-time.After(150 * time.Millisecond):
			}
			java.send("release")
			java.expect("released", 10*time.Second)
			var l *Lease
			select {
			case l = <-got:
			case err := <-errs:
				t.Fatal(err)
			case <-time.After(10 * time.Second):
				t.Fatal("Go got no lease after Curator released it")
			}
			java.send("lease %s 1", p)
			waitChildren(t, s, p+"/leases", 2)
			java.quiet("Go holds the only lease")
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
			java.expect("leased ", 10*time.Second)
			java.send("release")
			java.expect("released", 10*time.Second)
		})
	})
}
