package replication

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// TestDecideTakeover: which servers can resume a checkpoint another
// server wrote, and what a refusal names.
func TestDecideTakeover(t *testing.T) {
	const (
		uOld   = "3e11fa47-71ca-11e1-9e33-c80aa9429562" // wrote the checkpoint
		uNew   = "4e11fa47-71ca-11e1-9e33-c80aa9429562" // the candidate
		uPrim  = "5e11fa47-71ca-11e1-9e33-c80aa9429562" // the primary of both
		uOther = "6e11fa47-71ca-11e1-9e33-c80aa9429562" // some other server
	)
	maria := func(server, gtid string) Position {
		return Position{File: "mysql-bin.000002", Pos: 400, GTID: gtid, Server: server}
	}
	mariaC := func(id uint32, pos, state string) candidate {
		return candidate{id: sourceID{Name: "mariadb:" + strconv.FormatUint(uint64(id), 10), ServerID: id}, addr: "root@db:3306", pos: pos, state: state}
	}
	my := func(server, gtid string) Position {
		return Position{File: "binlog.000002", Pos: 400, GTID: gtid, Server: "mysql:" + server}
	}
	myC := func(u, executed string, readOnly bool) candidate {
		return candidate{id: sourceID{Name: "mysql:" + u, ServerID: 7}, addr: "root@db:3306", pos: executed, state: executed, readOnly: readOnly}
	}
	tests := []struct {
		name   string
		flavor string
		cp     Position
		// followed is the history the target followed up to cp, as the
		// checkpoint row keeps it; "" when unknown.
		followed string
		c        candidate
		errant   string // "" when the candidate can take over
		refuse   string // part of a refusal that is not about errant transactions
	}{
		{name: "same server", flavor: FlavorMariaDB, cp: maria("mariadb:1", "0-1-50"), c: mariaC(1, "0-1-60", "0-1-60")},
		{name: "unknown server", flavor: FlavorMariaDB, cp: maria("", "0-1-50"), c: mariaC(2, "0-1-10", "0-1-10,0-2-5")},
		{name: "promoted replica", flavor: FlavorMariaDB, cp: maria("mariadb:1", "0-1-50"), c: mariaC(2, "0-1-50", "0-1-50")},
		{name: "later writes of the old server", flavor: FlavorMariaDB, cp: maria("mariadb:1", "0-1-50"), c: mariaC(2, "0-1-70", "0-1-70")},
		{name: "writes after promotion", flavor: FlavorMariaDB, cp: maria("mariadb:1", "0-1-50"), c: mariaC(2, "0-2-65", "0-1-50,0-2-65")},
		{name: "own domain of the candidate", flavor: FlavorMariaDB, cp: maria("mariadb:1", "0-1-50"), c: mariaC(2, "0-1-50,9-2-3", "0-1-50,9-2-3")},
		{
			name: "checkpoint read from a replica of the primary", flavor: FlavorMariaDB,
			cp: maria("mariadb:3", "0-1-50"), c: mariaC(2, "0-1-55", "0-1-55"),
		},
		{
			name: "errant write of the candidate below the checkpoint", flavor: FlavorMariaDB,
			cp: maria("mariadb:1", "0-1-50"), c: mariaC(2, "0-1-50", "0-2-41,0-1-50"), errant: "0-2-41",
		},
		{
			name: "errant write at the checkpoint's sequence number", flavor: FlavorMariaDB,
			cp: maria("mariadb:1", "0-1-50"), c: mariaC(2, "0-1-50", "0-1-50,0-2-50"), errant: "0-2-50",
		},
		{
			name: "errant write of a third server", flavor: FlavorMariaDB,
			cp: maria("mariadb:1", "0-1-50,1-1-7"), c: mariaC(2, "0-1-50,1-1-7", "0-1-50,0-4-12,1-1-7"), errant: "0-4-12",
		},
		{
			name: "foreign domain", flavor: FlavorMariaDB,
			cp: maria("mariadb:1", "0-1-50"), c: mariaC(2, "0-1-50,5-4-3", "0-1-50,5-4-3,9-2-1"), errant: "5-4-3",
		},
		{
			name: "behind the checkpoint", flavor: FlavorMariaDB,
			cp: maria("mariadb:1", "0-1-50"), c: mariaC(2, "0-1-49", "0-1-49,0-2-10"), refuse: "does not contain",
		},
		{
			// Promoted before it received the checkpoint's last transaction,
			// then written to: its position "contains" the checkpoint's.
			name: "promoted without the checkpoint's last transaction", flavor: FlavorMariaDB,
			cp: maria("mariadb:1", "0-1-35"), c: mariaC(2, "0-2-40", "0-1-34,0-2-40"), refuse: "lacks 0-1-35",
		},
		// P (1) was the primary; R1 (2) was promoted at 0-1-50 and wrote
		// 0-2-51..70; R2 (3), a replica of both in turn, is the
		// candidate. Its binlog state keeps P's last GTID, below the
		// checkpoint and of neither R1 nor the checkpoint's GTID.
		{
			name: "second failover: the first primary's writes are followed history", flavor: FlavorMariaDB,
			cp: maria("mariadb:2", "0-2-70"), followed: "0-1-50,0-2-70", c: mariaC(3, "0-2-70", "0-1-50,0-2-70"),
		},
		{
			name: "second failover, history unknown (older checkpoint table)", flavor: FlavorMariaDB,
			cp: maria("mariadb:2", "0-2-70"), c: mariaC(3, "0-2-70", "0-1-50,0-2-70"), errant: "0-1-50",
		},
		{
			name: "second failover: an errant write of the candidate below the checkpoint", flavor: FlavorMariaDB,
			cp: maria("mariadb:2", "0-2-70"), followed: "0-1-50,0-2-70", c: mariaC(3, "0-2-70", "0-1-50,0-2-70,0-3-60"), errant: "0-3-60",
		},
		{
			name: "second failover: the first primary wrote more than the target followed", flavor: FlavorMariaDB,
			cp: maria("mariadb:2", "0-2-70"), followed: "0-1-50,0-2-70", c: mariaC(3, "0-2-70", "0-1-55,0-2-70"), errant: "0-1-55",
		},
		{
			name: "history of another domain covers nothing in this one", flavor: FlavorMariaDB,
			cp: maria("mariadb:2", "0-2-70,1-4-90"), followed: "0-2-70,1-4-90", c: mariaC(3, "0-2-70,1-4-90", "0-2-70,0-4-12,1-4-90"), errant: "0-4-12",
		},
		{
			name: "back to the former primary, its own writes followed", flavor: FlavorMariaDB,
			cp: maria("mariadb:2", "0-2-70"), followed: "0-1-50,0-2-70", c: mariaC(1, "0-2-70", "0-1-50,0-2-70"),
		},
		{
			name: "back to the former primary, history unknown", flavor: FlavorMariaDB,
			cp: maria("mariadb:2", "0-2-70"), c: mariaC(1, "0-2-70", "0-1-50,0-2-70"), errant: "0-1-50",
		},
		{
			name: "back to the former primary, which wrote after it was left", flavor: FlavorMariaDB,
			cp: maria("mariadb:2", "0-2-70"), followed: "0-1-50,0-2-70", c: mariaC(1, "0-2-70", "0-1-52,0-2-70"), errant: "0-1-52",
		},
		{
			name: "history learnt from a GTID position: the checkpoint server still counts", flavor: FlavorMariaDB,
			cp: maria("mariadb:1", "0-3-50"), followed: "0-3-50", c: mariaC(2, "0-3-50", "0-1-20,0-3-50"),
		},
		{name: "no GTID state", flavor: FlavorMariaDB, cp: maria("mariadb:1", ""), c: mariaC(2, "0-1-50", "0-1-50"), refuse: "has no GTID state"},
		{
			name: "checkpoint of another flavor's server", flavor: FlavorMariaDB,
			cp: maria("mysql:"+uOld, "0-1-50"), c: mariaC(2, "0-1-50", "0-1-50"), refuse: "is not mariadb:<server_id>",
		},

		{name: "mysql: promoted replica", flavor: FlavorMySQL, cp: my(uOld, uOld+":1-50"), c: myC(uNew, uOld+":1-50", false)},
		{
			name: "mysql: later writes of the old server and of the candidate", flavor: FlavorMySQL,
			cp: my(uOld, uOld+":1-50"), c: myC(uNew, uOld+":1-60,"+uNew+":1-9", false),
		},
		{
			name: "mysql: checkpoint read from a replica, candidate further on", flavor: FlavorMySQL,
			cp: my(uOld, uPrim+":1-500"), c: myC(uNew, uPrim+":1-510", true),
		},
		{
			name: "mysql: a write of a read-only candidate", flavor: FlavorMySQL,
			cp: my(uOld, uOld+":1-50"), c: myC(uNew, uOld+":1-50,"+uNew+":1-2", true), errant: uNew + ":1-2",
		},
		{
			name: "mysql: a third server's transactions", flavor: FlavorMySQL,
			cp: my(uOld, uOld+":1-50"), c: myC(uNew, uOld+":1-50,"+uOther+":1-3", false), errant: uOther + ":1-3",
		},
		{
			name: "mysql: a gap the old server never filled", flavor: FlavorMySQL,
			cp: my(uOld, uOld+":1-50,"+uPrim+":1-10:12-20"), c: myC(uNew, uOld+":1-50,"+uPrim+":1-25", false), errant: uPrim + ":11",
		},
		{
			name: "mysql: behind the checkpoint", flavor: FlavorMySQL,
			cp: my(uOld, uOld+":1-50"), c: myC(uNew, uOld+":1-40", false), refuse: "does not contain",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := decideTakeover(tt.flavor, tt.cp, tt.followed, tt.c, "`shepherd`.`shepherd_checkpoint`")
			switch {
			case tt.errant == "" && tt.refuse == "":
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			case err == nil:
				t.Fatalf("%s took over checkpoint %+v", tt.c.id.Name, tt.cp)
			case !errors.Is(err, ErrOtherSource) || !errors.Is(err, ErrNonRetryable):
				t.Fatalf("refusal %v is not ErrOtherSource, non-retryable", err)
			}
			t.Logf("refusal: %v", err)
			want := []string{tt.cp.Server, tt.c.id.Name, tt.c.addr, "point the task back at " + tt.cp.Server}
			if tt.refuse != "" {
				want = append(want, tt.refuse)
			} else {
				want = append(want, "errant transactions "+tt.errant+":", tt.cp.GTID, tt.c.state, "remove them from "+tt.c.id.Name)
			}
			for _, part := range want {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("refusal %q does not name %q", err, part)
				}
			}
		})
	}
}

// TestFollowedState: the history a checkpoint keeps is parsed, grown
// and written back as a binlog state, sorted, one entry per domain and
// server_id with its highest sequence number.
func TestFollowedState(t *testing.T) {
	f, err := parseFollowedState(" 1-4-90,0-2-70,\n0-1-50 ")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"0-2-71", "0-1-40", "2-9-1", "0-3-5", "0-2-72"} {
		m, err := gomysql.ParseMariadbGTID(g)
		if err != nil {
			t.Fatal(err)
		}
		f.add(m)
	}
	const want = "0-1-50,0-2-72,0-3-5,1-4-90,2-9-1"
	if got := f.String(); got != want {
		t.Errorf("state %q, want %q", got, want)
	}
	if again, err := parseFollowedState(want); err != nil || again.String() != want {
		t.Errorf("%q parses back as %q (%v)", want, again, err)
	}
	for _, tt := range []struct {
		domain, server uint32
		seq            uint64
		want           bool
	}{
		{0, 1, 50, true}, {0, 1, 3, true}, {0, 1, 51, false}, {0, 4, 1, false}, {1, 2, 1, false}, {2, 9, 1, true},
	} {
		if got := f.covers(tt.domain, tt.server, tt.seq); got != tt.want {
			t.Errorf("covers %d-%d-%d = %v, want %v", tt.domain, tt.server, tt.seq, got, tt.want)
		}
	}
	if empty, err := parseFollowedState(""); err != nil || empty.String() != "" || empty.covers(0, 1, 1) {
		t.Errorf("empty state: %q, %v", empty, err)
	}
	if _, err := parseFollowedState("0-1"); err == nil {
		t.Error("a malformed state parsed")
	}
}

// TestMinusIntervals: the set difference the MySQL rule is made of
// (intervals are [Start, Stop), as go-mysql keeps them).
func TestMinusIntervals(t *testing.T) {
	iv := func(bounds ...int64) gomysql.IntervalSlice {
		var s gomysql.IntervalSlice
		for i := 0; i < len(bounds); i += 2 {
			s = append(s, gomysql.Interval{Start: bounds[i], Stop: bounds[i+1]})
		}
		return s
	}
	tests := []struct{ a, b, want gomysql.IntervalSlice }{
		{iv(1, 51), nil, iv(1, 51)},
		{iv(1, 51), iv(1, 51), nil},
		{iv(1, 51), iv(10, 20), iv(1, 10, 20, 51)},
		{iv(1, 11, 20, 31), iv(5, 25), iv(1, 5, 25, 31)},
		{iv(5, 10), iv(1, 3, 12, 20), iv(5, 10)},
		{iv(1, 100), iv(1, 10, 20, 30, 90, 200), iv(10, 20, 30, 90)},
	}
	for _, tt := range tests {
		if got := minusIntervals(tt.a, tt.b); !got.Equal(tt.want) {
			t.Errorf("%v minus %v = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
