package recipe

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/go-zookeeper/zk"
)

// exampleConnect returns a connect string for an example: a server the
// tests started, with a chroot of the example's own. In real code this
// is the --zk flag, e.g. "zk1:2181,zk2:2181,zk3:2181/shepherd".
func exampleConnect(name string) string {
	for _, tg := range targets {
		if tg.Up() {
			return fmt.Sprintf("%s/recipe-examples/%s-%d", tg.Addr, name, pathSeq.Add(1))
		}
	}
	panic("recipe examples: no server to run on")
}

// A leader latch: block until leading, work while leading, resign.
// Writes that must never come from a deposed leader go through the fence.
func ExampleElection() {
	ctx := context.Background()
	s, err := Dial(ctx, exampleConnect("election"), Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	e := NewElection(s, "/mysql_replicator/tasks/copy_hot_item/leader", "core-host-1")
	if err := e.Campaign(ctx); err != nil {
		log.Fatal(err)
	}
	leader, _ := e.Leader(ctx)
	fmt.Println("leader:", leader, "leading:", e.IsLeader())

	// A checkpoint written only while this term lasts on the server.
	if err := s.EnsurePath(ctx, "/mysql_replicator/tasks/copy_hot_item/lastCommit"); err != nil {
		log.Fatal(err)
	}
	_, err = s.Multi(ctx,
		&zk.CheckVersionRequest{Path: e.Node(), Version: 0},
		&zk.SetDataRequest{
			Path:    "/mysql_replicator/tasks/copy_hot_item/lastCommit",
			Data:    fmt.Appendf(nil, `{"version":1,"epoch":%d,"pos":4}`, e.Token()),
			Version: -1,
		})
	fmt.Println("fenced write:", err)

	if err := e.Resign(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("leading after Resign:", e.IsLeader())
	// Output:
	// leader: core-host-1 leading: true
	// fenced write: <nil>
	// leading after Resign: false
}

// A leader selector: lead is called each time the candidate leads; its
// context ends when leadership is interrupted; returning hands over.
func ExampleRunSelector() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := Dial(ctx, exampleConnect("selector"), Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	terms := 0
	err = RunSelector(ctx, s, "/scheduler/jobs/daily-report/leader", "scheduler-1",
		func(ctx context.Context, e *Election) error {
			terms++
			fmt.Printf("term %d: leading as %s\n", terms, e.ID())
			if terms == 2 {
				cancel() // stop the selector: this process shuts down
			}
			return nil // done: hand over (and queue again)
		})
	fmt.Println("selector stopped:", err)
	// Output:
	// term 1: leading as scheduler-1
	// term 2: leading as scheduler-1
	// selector stopped: context canceled
}

// Anyone can follow who leads.
func ExampleElection_Observe() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Dial(ctx, exampleConnect("observe"), Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	leaders := NewElection(s, "/election", "").Observe(ctx)
	fmt.Printf("leader: %q\n", <-leaders)
	candidate := NewElection(s, "/election", "node-7")
	if err := candidate.Campaign(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("leader: %q\n", <-leaders)
	// Output:
	// leader: ""
	// leader: "node-7"
}
