package cluster_test

import (
	"fmt"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/collector"
	"github.com/shepherd-dev/shepherd/scheduler"
)

// A test of the console or the monitor serves a Fixed snapshot, and
// changes it to see how its subscriber reacts.
func ExampleFixed() {
	feed := cluster.NewFixed(&cluster.Snapshot{
		ReadAt:     time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC),
		Jobs:       []scheduler.JobStatus{{Name: "nightly", Stored: true}},
		Collectors: []collector.CollectorInfo{{Name: "web1", Alive: true}},
	})
	updates, cancel := feed.Subscribe()
	defer cancel()

	snap := <-updates // the snapshot there is, at once
	c, _ := snap.Collector("web1")
	fmt.Println(snap.ReadAt.Format(time.Kitchen), "web1 alive:", c.Alive)

	feed.Set(&cluster.Snapshot{
		ReadAt:     snap.ReadAt.Add(time.Minute),
		Collectors: []collector.CollectorInfo{{Name: "web1", Reason: "status unchanged for 12s (dead after 10s)"}},
		Errors:     map[cluster.Section]string{cluster.SectionJobs: "connection lost"},
	})
	snap = <-updates
	c, _ = snap.Collector("web1")
	fmt.Println(snap.ReadAt.Format(time.Kitchen), "web1 alive:", c.Alive, "-", c.Reason)
	fmt.Println("jobs:", snap.Errors[cluster.SectionJobs])
	// Output:
	// 12:00PM web1 alive: true
	// 12:01PM web1 alive: false - status unchanged for 12s (dead after 10s)
	// jobs: connection lost
}
