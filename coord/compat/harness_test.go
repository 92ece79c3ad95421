package compat

import (
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// These tests check the suite's own machinery, which every differential
// verdict relies on.

func TestRenderNormalisesZxidsAndSessions(t *testing.T) {
	var tr transcript
	tr.add("%s create -> %s", sess(0x77), fmtStat(proto.Stat{Czxid: 900, Mzxid: 905, Pzxid: 900, Ctime: 1, EphemeralOwner: 0x77}))
	tr.add("%s get -> %s", sess(0x42), fmtStat(proto.Stat{Czxid: 0, Mzxid: 300, Pzxid: 905}))
	got := tr.render()
	want := []string{
		"S1 create -> {czxid=Z2 mzxid=Z3 pzxid=Z2 ctime=T mtime=0 ver=0 cver=0 aver=0 owner=S1 len=0 kids=0}",
		"S2 get -> {czxid=0 mzxid=Z1 pzxid=Z3 ctime=0 mtime=0 ver=0 cver=0 aver=0 owner=0 len=0 kids=0}",
	}
	if d := diffLines(want, got); d != "" {
		t.Fatalf("render:\n%s", d)
	}
}

func TestRenderIgnoresZxidGaps(t *testing.T) {
	render := func(a, b int64) []string {
		var tr transcript
		tr.add("%s %s", zx(a), zx(b))
		return tr.render()
	}
	if a, b := render(10, 11), render(10, 500); strings.Join(a, "") != strings.Join(b, "") {
		t.Fatalf("gap changed the rendering: %q vs %q", a, b)
	}
	if a, b := render(10, 11), render(11, 10); strings.Join(a, "") == strings.Join(b, "") {
		t.Fatalf("order did not change the rendering: %q", a)
	}
}

func TestMarkersCannotBeForgedByData(t *testing.T) {
	var tr transcript
	tr.add("data %s", fmtData([]byte("\x00z5\x00")))
	if got := tr.render()[0]; strings.Contains(got, "Z1") {
		t.Fatalf("znode data was read as a zxid marker: %q", got)
	}
}

func TestFmtHelpers(t *testing.T) {
	tests := []struct{ got, want string }{
		{fmtData(nil), "nil"},
		{fmtData([]byte{}), `""`},
		{fmtData([]byte(strings.Repeat("a", 40))), `"` + strings.Repeat("a", 32) + `"…(40 bytes)`},
		{fmtChildren([]string{"b", "a"}), "[a b]"},
		{fmtChildren(nil), "nil"},
		{fmtPerms(proto.PermAll), "cdrwa"},
		{fmtPerms(0), "-"},
		{fmtPerms(proto.PermRead | 0x40), "r+0x40"},
		{fmtCode(proto.ErrNoNode), "NoNode"},
		{fmtCode(-999), "code(-999)"},
		{fmtEvent(proto.EventNodeCreated, proto.StateSyncConnected, "/a"), "NodeCreated /a"},
		{fmtEvent(proto.EventNone, proto.StateExpired, ""), "None  Expired"},
		{fmtMode(9), "mode(9)"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestDiffLines(t *testing.T) {
	if d := diffLines([]string{"a", "b"}, []string{"a", "b"}); d != "" {
		t.Fatalf("equal inputs produced a diff:\n%s", d)
	}
	want := []string{"1", "2", "3", "4", "5", "6", "7", "8"}
	got := []string{"1", "2", "3", "X", "5", "6", "7", "8", "9"}
	d := diffLines(want, got)
	for _, line := range []string{"- 4", "+ X", "+ 9", "  3", "  5"} {
		if !strings.Contains(d, line+"\n") {
			t.Errorf("diff lacks %q:\n%s", line, d)
		}
	}
	if strings.Contains(d, "  1\n") {
		t.Errorf("diff shows context far from any change:\n%s", d)
	}
}

func TestShapeOf(t *testing.T) {
	tests := []struct {
		word, ans string
		want      []string
	}{
		{"ruok", "imok", []string{"= imok"}},
		{"srvr", "Zookeeper version: 3.8.0\nMode: standalone\nNode count: 5\n", []string{"key Mode", "key Node count", "key Zookeeper version"}},
		{"conf", "clientPort=2181\ntickTime=2000\n", []string{"key clientPort", "key tickTime"}},
		{"wchs", "3 connections watching 7 paths\nTotal watches:9\n", []string{"line # connections watching # paths", "line Total watches:#"}},
		{"cons", " /127.0.0.1:5[1](queued=0,sid=0x1a2,lop=GETD)\n /127.0.0.1:6[1](queued=0,sid=0x1b,lop=PING)\n",
			[]string{"line  /#.#.#.#:#[#](queued=#,sid=<hex>,lop=<op>)"}},
		{"dump", "Sessions with Ephemerals (1):\n0x1:\n\t/t-x/e\n", []string{"line \t<path>", "line <hex>:", "line Sessions with Ephemerals (#):"}},
	}
	for _, tc := range tests {
		if d := diffLines(tc.want, shapeOf(tc.word, tc.ans)); d != "" {
			t.Errorf("shapeOf(%s):\n%s", tc.word, d)
		}
	}
	mntr := shapeOf("mntr", "zk_version\t3.8.0\nzk_avg_latency\t0\n")
	if mntr[0] != "key zk_approximate_data_size missing" || !strings.Contains(strings.Join(mntr, "\n"), "key zk_version\n") {
		t.Errorf("mntr shape = %q", mntr)
	}
}
