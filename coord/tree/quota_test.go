package tree

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// quotaStep is one step of a quota scenario: a write, or a check.
type quotaStep func(h *harness)

// The steps run as the super user, so that ACLs never get in the way.
func mk(path, data string) quotaStep {
	return func(h *harness) {
		h.t.Helper()
		h.must(root, Op{Code: proto.OpCreate, Path: path, Data: []byte(data), ACL: open})
	}
}

func rm(path string) quotaStep {
	return func(h *harness) { h.t.Helper(); h.must(root, del(path, -1)) }
}

func put(path, data string) quotaStep {
	return func(h *harness) { h.t.Helper(); h.must(root, set(path, data, -1)) }
}

func putNil(path string) quotaStep {
	return func(h *harness) {
		h.t.Helper()
		h.must(root, Op{Code: proto.OpSetData, Path: path, Version: -1})
	}
}

// setquota writes what zkCli's "setquota -n 3 <p>" writes: the missing
// nodes of /zookeeper/quota<p>, the limits, then zeroed stats.
func setquota(p string) quotaStep {
	return func(h *harness) {
		h.t.Helper()
		qp := quotaPath
		for name := range strings.SplitSeq(p[1:], "/") {
			qp += "/" + name
			if _, ok := h.tr.Stat(qp); !ok {
				h.must(root, Op{Code: proto.OpCreate, Path: qp, ACL: open})
			}
		}
		mk(qp+limitsSuffix, "count=3,bytes=-1=;byteHardLimit=-1;countHardLimit=-1")(h)
		mk(qp+statsSuffix, "count=0,bytes=0")(h)
	}
}

// wantNodeData checks a node's data; "<none>" means the node must not exist.
func wantNodeData(path, data string) quotaStep {
	return func(h *harness) {
		h.t.Helper()
		got, _, err := h.tr.Get(root, path)
		switch {
		case data == "<none>" && err == proto.ErrNoNode:
		case err != nil:
			h.t.Fatalf("get %s: %v, want data %q", path, err, data)
		case string(got) != data:
			h.t.Fatalf("%s holds %q, want %q", path, got, data)
		}
	}
}

func wantStats(p, data string) quotaStep { return wantNodeData(statsPath(p), data) }

func TestQuotaStats(t *testing.T) {
	ephemeral := func(session int64, path, data string) quotaStep {
		return func(h *harness) {
			h.t.Helper()
			h.must(Caller{Session: session, Super: true}, Op{Code: proto.OpCreate, Path: path, Data: []byte(data), ACL: open, Flags: proto.ModeEphemeral})
		}
	}
	cases := []struct {
		name  string
		steps []quotaStep
	}{
		{"zkCli session", []quotaStep{
			mk("/quota", ""), mk("/quota/limited", "12345"), setquota("/quota/limited"),
			wantStats("/quota/limited", "count=1,bytes=5"),
			mk("/quota/limited/a", "abc"), mk("/quota/limited/b", ""), put("/quota/limited", "1234567890"),
			wantStats("/quota/limited", "count=3,bytes=13"),
			rm("/quota/limited/b"),
			wantStats("/quota/limited", "count=2,bytes=13"),
		}},
		{"the subtree is counted when the stats node is created", []quotaStep{
			mk("/a", "1"), mk("/a/b", "22"), mk("/a/b/c", "333"), mk("/x", "4444"), setquota("/a"),
			wantStats("/a", "count=3,bytes=6"),
		}},
		{"siblings sharing a name prefix are outside", []quotaStep{
			mk("/a", ""), setquota("/a"), mk("/ab", "xx"), mk("/a2", "y"), mk("/b", "z"),
			wantStats("/a", "count=1,bytes=0"),
		}},
		{"stats without limits count once and are not kept", []quotaStep{
			mk("/a", "1"), mk(quotaPath+"/a", ""), mk(quotaPath+"/a"+statsSuffix, "junk"),
			wantStats("/a", "count=1,bytes=1"),
			mk("/a/b", "22"),
			wantStats("/a", "count=1,bytes=1"),
			mk(quotaPath+"/a"+limitsSuffix, "count=3"), mk("/a/c", "333"),
			wantStats("/a", "count=2,bytes=4"),
		}},
		{"limits rewritten or deleted", []quotaStep{
			mk("/a", ""), setquota("/a"), mk("/a/b", "xy"),
			put(quotaPath+"/a"+limitsSuffix, "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=-1"), mk("/a/c", "z"),
			wantStats("/a", "count=3,bytes=3"),
			rm(quotaPath + "/a" + limitsSuffix), mk("/a/d", "zz"),
			wantStats("/a", "count=3,bytes=3"),
		}},
		{"missing stats are not updated, and recomputed when recreated", []quotaStep{
			mk("/a", ""), setquota("/a"), rm(statsPath("/a")), mk("/a/b", "xy"),
			wantStats("/a", "<none>"),
			mk(statsPath("/a"), "count=0,bytes=0"),
			wantStats("/a", "count=2,bytes=2"),
		}},
		{"nested roots charge the deepest only", []quotaStep{
			mk("/a", ""), mk("/a/b", ""), setquota("/a"), setquota("/a/b"),
			wantStats("/a", "count=2,bytes=0"), wantStats("/a/b", "count=1,bytes=0"),
			mk("/a/b/c", "123"), mk("/a/d", "4"),
			wantStats("/a", "count=3,bytes=1"), wantStats("/a/b", "count=2,bytes=3"),
			rm(quotaPath + "/a/b" + limitsSuffix), mk("/a/b/e", "55"),
			wantStats("/a", "count=4,bytes=3"), wantStats("/a/b", "count=2,bytes=3"),
		}},
		{"the root node itself deleted and recreated", []quotaStep{
			mk("/a", "xyz"), setquota("/a"), rm("/a"),
			wantStats("/a", "count=0,bytes=0"),
			mk("/a", "12"),
			wantStats("/a", "count=1,bytes=2"),
		}},
		{"setData to nil and back", []quotaStep{
			mk("/a", "abc"), setquota("/a"), putNil("/a"),
			wantStats("/a", "count=1,bytes=0"),
			put("/a", "abcdef"),
			wantStats("/a", "count=1,bytes=6"),
		}},
		{"unknown keys are kept, in Java order", []quotaStep{
			mk("/a", ""), setquota("/a"), put(statsPath("/a"), "zeta=1;count=1,Zeta=3,bytes=0;alpha=2"), mk("/a/b", "x"),
			wantStats("/a", "count=2,bytes=1=;Zeta=3;alpha=2;zeta=1"),
		}},
		{"empty values and empty data read as -1", []quotaStep{
			mk("/a", ""), setquota("/a"), put(statsPath("/a"), "bytes==7;count=2"), mk("/a/b", "x"),
			wantStats("/a", "count=3,bytes=0"),
			put(statsPath("/a"), ""), mk("/a/c", "yy"),
			wantStats("/a", "count=0,bytes=1"),
		}},
		{"stats that do not parse are left alone", []quotaStep{
			mk("/a", ""), setquota("/a"), put(statsPath("/a"), "count=abc"), mk("/a/b", "x"),
			wantStats("/a", "count=abc"),
			put(statsPath("/a"), "count"), rm("/a/b"),
			wantStats("/a", "count"),
		}},
		{"stats under /zookeeper/quota count the whole tree once", []quotaStep{
			mk(quotaPath+statsSuffix, "x"),
			wantNodeData(quotaPath+statsSuffix, "count=5,bytes=1"),
			mk(quotaPath+limitsSuffix, "count=1"), mk("/a", "1"),
			wantNodeData(quotaPath+statsSuffix, "count=5,bytes=1"),
		}},
		{"a quota on /zookeeper counts its own quota nodes", []quotaStep{
			mk(quotaPath+"/zookeeper", ""), mk(quotaPath+"/zookeeper"+limitsSuffix, "count=1"),
			mk(quotaPath+"/zookeeper"+statsSuffix, "count=0,bytes=0"),
			// Six nodes and 22 bytes when the stats are computed, then
			// the stats node's own create (1 node, 15 bytes) on top.
			wantStats("/zookeeper", "count=7,bytes=37"),
			mk("/zookeeper/x", "ab"),
			wantStats("/zookeeper", "count=8,bytes=39"),
		}},
		{"ephemerals deleted with their session", []quotaStep{
			func(h *harness) { h.openSession(7, 5000) },
			mk("/a", ""), setquota("/a"), ephemeral(7, "/a/e1", "x"), ephemeral(7, "/a/e2", "yy"),
			wantStats("/a", "count=3,bytes=3"),
			func(h *harness) { h.closeSession(7) },
			wantStats("/a", "count=1,bytes=0"),
		}},
		{"a multi charges each op", []quotaStep{
			mk("/a", ""), setquota("/a"),
			func(h *harness) {
				h.t.Helper()
				r := h.multi(root,
					Op{Code: proto.OpCreate, Path: "/a/b", Data: []byte("12"), ACL: open},
					set("/a/b", "123", -1), create("/a/c", 0), del("/a/c", -1))
				if r.Err != proto.ErrOK {
					h.t.Fatalf("multi: %v", r.Err)
				}
			},
			wantStats("/a", "count=2,bytes=3"),
		}},
		{"a failed multi charges nothing", []quotaStep{
			mk("/a", ""), setquota("/a"),
			func(h *harness) {
				h.t.Helper()
				if r := h.multi(root, create("/a/b", 0), del("/a/missing", -1)); r.Err != proto.ErrNoNode {
					h.t.Fatalf("multi: %v, want ErrNoNode", r.Err)
				}
			},
			wantStats("/a", "count=1,bytes=0"),
		}},
		{"a reaped container", []quotaStep{
			mk("/a", ""), setquota("/a"),
			func(h *harness) {
				h.must(root, Op{Code: proto.OpCreateContainer, Path: "/a/c", Data: []byte("cc"), ACL: open, Flags: proto.ModeContainer})
			},
			mk("/a/c/x", "1"), rm("/a/c/x"),
			wantStats("/a", "count=2,bytes=2"),
			func(h *harness) { h.must(root, Op{Code: proto.OpDeleteContainer, Path: "/a/c"}) },
			wantStats("/a", "count=1,bytes=0"),
		}},
		{"root paths are taken literally", []quotaStep{
			mk("/a", ""), mk("/a/ ", "x"), setquota("/a/ "), mk("/a/ /b", "yy"), mk("/a/c", "z"),
			wantStats("/a/ ", "count=2,bytes=3"),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			for _, step := range tc.steps {
				step(h)
			}
			checkInvariants(t, h.tr)
		})
	}
}

func TestQuotaStatsNodeStat(t *testing.T) {
	h := newHarness(t)
	mk("/a", "")(h)
	mk(quotaPath+"/a", "")(h)
	mk(quotaPath+"/a"+limitsSuffix, "count=3")(h)
	sp := statsPath("/a")
	created := h.must(root, Op{Code: proto.OpCreate2, Path: sp, Data: []byte("count=0,bytes=0,zzz=5"), ACL: open})
	// The reply shows the data as created; the node holds the counts.
	if got := created.Stat.DataLength; got != 21 {
		t.Fatalf("create2 reply dataLength %d, want 21 (the client's data)", got)
	}
	wantStats("/a", "count=1,bytes=0")(h)
	before := h.stat(sp)

	r := h.do(anyone, Op{Code: proto.OpCreate, Path: "/a/b", Data: []byte("xyz"), ACL: open})
	want := []Event{{Type: proto.EventNodeCreated, Path: "/a/b"}, {Type: proto.EventNodeChildrenChanged, Path: "/a"}}
	if !sameEvents(r.Events, want) {
		t.Fatalf("create under a quota root fired %v, want %v: stats changes fire no watch", r.Events, want)
	}
	for range 9 {
		mk(fmt.Sprintf("/a/n%d", h.tr.NodeCount()), "0123456789")(h)
	}
	wantStats("/a", "count=11,bytes=93")(h)
	after := h.stat(sp)
	if after.DataLength != int32(len("count=11,bytes=93")) {
		t.Fatalf("stats dataLength %d after the rewrite, want %d", after.DataLength, len("count=11,bytes=93"))
	}
	after.DataLength = before.DataLength
	if after != before {
		t.Fatalf("stats stat moved beyond dataLength:\n got %+v\nwant %+v", after, before)
	}

	// A setData reply shows the node written, which is not the stats node.
	res := h.must(anyone, set("/a", "12", -1))
	if res.Stat.DataLength != 2 || res.Stat.Version != 1 {
		t.Fatalf("setData reply %+v", res.Stat)
	}
	checkInvariants(t, h.tr)
}

func TestParseFormatStats(t *testing.T) {
	cases := []struct {
		in, out string // out "" means StatsTrack throws
	}{
		{"", "count=-1,bytes=-1"},
		{"count=0,bytes=0", "count=0,bytes=0"},
		{"count=3,bytes=100=;byteHardLimit=-1;countHardLimit=-1", "count=3,bytes=100=;byteHardLimit=-1;countHardLimit=-1"},
		{"bytes=5,count=2", "count=2,bytes=5"},
		{"count=1;;,bytes=2,,", "count=1,bytes=2"},
		{",,;", "count=-1,bytes=-1"},
		{"bytes==7;count=2", "count=2,bytes=-1"},
		{"count=1=2", "count=1,bytes=-1"},
		{"=5", "count=-1,bytes=-1=;=5"},
		{"count=+4,bytes=-3", "count=4,bytes=-3"},
		{"count=9223372036854775807", "count=9223372036854775807,bytes=-1"},
		{"count=1,count=2", "count=2,bytes=-1"},
		{"b=1,a=2,B=3", "count=-1,bytes=-1=;B=3;a=2;b=1"},
		// Java orders by UTF-16 units: U+1F600 (a surrogate pair) before U+FFFF.
		{"\uffff=1,\U0001F600=2", "count=-1,bytes=-1=;\U0001F600=2;\uffff=1"},
		{"\xff=1", "count=-1,bytes=-1=;\ufffd=1"},
		{",count=1", ""},
		{"count", ""},
		{"count=", ""},
		{"=", ""},
		{"count=abc", ""},
		{"count=1.5", ""},
		{"count=9223372036854775808", ""},
		{"count= 1", ""},
	}
	for _, tc := range cases {
		stats, ok := parseStats([]byte(tc.in))
		switch {
		case tc.out == "" && ok:
			t.Errorf("parseStats(%q) = %v, want a failure as StatsTrack throws", tc.in, stats)
		case tc.out != "" && !ok:
			t.Errorf("parseStats(%q) failed, want %q", tc.in, tc.out)
		case ok:
			if got := string(formatStats(stats)); got != tc.out {
				t.Errorf("formatStats(parseStats(%q)) = %q, want %q", tc.in, got, tc.out)
			}
		}
	}
}

func TestQuotaTrie(t *testing.T) {
	cases := []struct {
		name    string
		add     []string
		remove  []string
		deepest map[string]string // path -> deepest root, "" for none
		empty   bool
	}{
		{
			name: "one root",
			add:  []string{"/a/b"},
			deepest: map[string]string{
				"/a/b": "/a/b", "/a/b/c/d": "/a/b", "/a": "", "/a/bc": "", "/b": "", "/": "",
			},
		},
		{
			name: "nested roots",
			add:  []string{"/a", "/a/b/c"},
			deepest: map[string]string{
				"/a": "/a", "/a/b": "/a", "/a/b/c": "/a/b/c", "/a/b/c/x": "/a/b/c", "/a/b/cx": "/a",
			},
		},
		{
			name:    "removing the inner root keeps the outer",
			add:     []string{"/a", "/a/b/c"},
			remove:  []string{"/a/b/c"},
			deepest: map[string]string{"/a/b/c/x": "/a"},
		},
		{
			name:    "removing the outer root keeps the inner",
			add:     []string{"/a", "/a/b/c"},
			remove:  []string{"/a"},
			deepest: map[string]string{"/a/x": "", "/a/b/c/x": "/a/b/c"},
		},
		{
			name:    "removing what is not a root changes nothing",
			add:     []string{"/a/b"},
			remove:  []string{"/a", "/a/b/c", "/x"},
			deepest: map[string]string{"/a/b/c": "/a/b"},
		},
		{
			name:   "removing every root empties the trie",
			add:    []string{"/a", "/a/b/c", "/d"},
			remove: []string{"/a/b/c", "/d", "/a"},
			empty:  true,
		},
		{
			name:    "components are literal",
			add:     []string{"/a/ "},
			deepest: map[string]string{"/a/ /b": "/a/ ", "/a/b": "", "/a": ""},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := &quotaTrie{}
			for _, p := range tc.add {
				q.add(p)
			}
			empty := false
			for _, p := range tc.remove {
				empty = q.remove(p)
			}
			if empty != tc.empty {
				t.Fatalf("remove reported empty=%v, want %v (roots left %q)", empty, tc.empty, q.roots())
			}
			if tc.empty && len(q.children) != 0 {
				t.Fatalf("an empty trie keeps %d children", len(q.children))
			}
			for path, want := range tc.deepest {
				got, ok := q.deepest(path)
				if ok != (want != "") || got != want {
					t.Errorf("deepest(%q) = %q, %v; want %q", path, got, ok, want)
				}
			}
		})
	}
}

func TestQuotaTrieIsDroppedWithTheLastRoot(t *testing.T) {
	h := newHarness(t)
	mk("/a", "")(h)
	setquota("/a")(h)
	if h.tr.quotas == nil {
		t.Fatal("no quota trie after setquota")
	}
	rm(quotaPath + "/a" + limitsSuffix)(h)
	if h.tr.quotas != nil {
		t.Fatalf("quota trie kept after the last limits node went: roots %q", h.tr.quotas.roots())
	}
}
