package ctl

import (
	"strings"
	"testing"
	"time"

	"github.com/shepherd-dev/shepherd/cluster"
	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/replication"
)

// TestTaskShowSnapshot: task show prints a copy's rows against the
// estimate, rate and time left, and each table's part.
func TestTaskShowSnapshot(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	v := cluster.TaskView{Name: "t", State: cluster.TaskRunning, Snapshot: &cluster.SnapshotView{
		SnapshotProgress: replication.SnapshotProgress{Rows: 4000, Estimated: 10000, Tables: []replication.TableCopy{
			{DB: "shop", Table: "a", Rows: 3000, Estimated: 3000, Done: true},
			{DB: "shop", Table: "b", Rows: 1000, Estimated: 7000},
			{DB: "shop", Table: "c", Estimated: 5}}},
		RowsPerSecond: 2000, ETA: 3 * time.Second}}
	var b strings.Builder
	writeTaskShow(&b, &core.TaskStatus{Name: "t"}, v, now, time.UTC)
	out := b.String()
	for _, want := range []string{
		"copying: 4000 of ~10000 rows (40%), 2000 rows/s, about 3s left",
		"shop.a: 3000 of ~3000 rows, done", "shop.b: 1000 of ~7000 rows, copying", "shop.c: 0 of ~5 rows, waiting",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("task show lacks %q:\n%s", want, out)
		}
	}
}
