package wal

import (
	"strings"
	"testing"
)

// logReadOf is a logRead of segments given as bytes, oldest first, the
// last one newest (its tail may be torn).
func logReadOf(segs ...[]byte) logRead {
	var lr logRead
	for i, data := range segs {
		h, _ := parseSegHeader(data)
		seg := &segment{first: h.first, prev: h.prev, prevKnown: true, path: "seg" + string(rune('a'+i)), onDisk: true}
		lr.plan.segs = append(lr.plan.segs, seg)
		lr.reads = append(lr.reads, segRead{seg: seg, data: data})
	}
	lr.tornOK = true
	return lr
}

// TestDecideLog: recovery's decision, without files: the records after
// the snapshot, the chain checks, and the repairs of the newest segment.
func TestDecideLog(t *testing.T) {
	t.Run("records after the snapshot", func(t *testing.T) {
		plan, notes, err := decideLog(logReadOf(segmentBytes(1, 0, 1, 2, 3), segmentBytes(4, 3, 4, 5)), 2)
		if err != nil || len(notes) != 0 {
			t.Fatalf("decideLog: %v, notes %v", err, notes)
		}
		checkRecords(t, plan.records, []int64{3, 4, 5})
		if plan.lastZxid != 5 || plan.truncatePath != "" || len(plan.removePaths) != 0 || len(plan.segs) != 2 {
			t.Errorf("plan %+v", plan)
		}
	})
	t.Run("gap", func(t *testing.T) {
		_, _, err := decideLog(logReadOf(segmentBytes(1, 0, 1, 2), segmentBytes(5, 4, 5)), 0)
		mustCorrupt(t, err, "segb", "gap in the history", "0x4", "0x2")
	})
	t.Run("zxids going back", func(t *testing.T) {
		_, _, err := decideLog(logReadOf(segmentBytes(1, 0, 1, 2, 3), segmentBytes(3, 1, 3)), 0)
		mustCorrupt(t, err, "segb", "not increasing")
	})
	t.Run("torn tail", func(t *testing.T) {
		newest := segmentBytes(3, 2, 3, 4)
		cut := len(newest) - 3
		plan, notes, err := decideLog(logReadOf(segmentBytes(1, 0, 1, 2), newest[:cut]), 0)
		if err != nil {
			t.Fatal(err)
		}
		checkRecords(t, plan.records, []int64{1, 2, 3})
		if plan.truncatePath != "segb" || plan.truncateAt >= int64(cut) || len(notes) != 1 || !notes[0].warn ||
			!strings.Contains(notes[0].msg, "torn tail") {
			t.Errorf("plan %+v, notes %+v: want segb cut before the torn record, with a warning", plan, notes)
		}
	})
	t.Run("newest without a record", func(t *testing.T) {
		plan, notes, err := decideLog(logReadOf(segmentBytes(1, 0, 1, 2), segmentBytes(3, 2)), 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.removePaths) != 1 || plan.removePaths[0] != "segb" || len(plan.segs) != 1 || plan.lastZxid != 2 ||
			len(notes) != 1 || !strings.Contains(notes[0].msg, "no complete record") {
			t.Errorf("plan %+v, notes %+v: want segb removed", plan, notes)
		}
	})
}
