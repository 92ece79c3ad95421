package replication

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

const testUUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"

// TestParseServerFilePos: file:pos and file:pos@server parse into a
// position of that server, its identity written as the replicator writes
// it; a GTID set is not a file position; each malformed input is refused
// with an error that says what is wrong.
func TestParseServerFilePos(t *testing.T) {
	for _, tt := range []struct {
		in     string
		want   Position
		isFile bool
		errHas string // "" for no error
	}{
		{"mysql-bin.000003:1234", Position{File: "mysql-bin.000003", Pos: 1234}, true, ""},
		{"mysql-bin.000003:1234@mariadb:2", Position{File: "mysql-bin.000003", Pos: 1234, Server: "mariadb:2"}, true, ""},
		{"mysql-bin.000003:4@mariadb:007", Position{File: "mysql-bin.000003", Pos: 4, Server: "mariadb:7"}, true, ""},
		{"mysql-bin.1000000:4@mysql:" + strings.ToUpper(testUUID), Position{File: "mysql-bin.1000000", Pos: 4, Server: "mysql:" + testUUID}, true, ""},
		{"0-1-5", Position{}, false, ""},
		{"0-1-5,1-2-3", Position{}, false, ""},
		{testUUID + ":1-5", Position{}, false, ""},
		{testUUID + ":1-5:7-9," + testUUID[:35] + "3:1", Position{}, false, ""},
		{"mysql-bin.000003:3", Position{}, true, "inside the file header"},
		{"mysql-bin.000003:0@mariadb:1", Position{}, true, "inside the file header"},
		{"mysql-bin.000003:x", Position{}, true, "is not a number"},
		{"mysql-bin.000003:4@", Position{}, true, "names no server after @"},
		{"mysql-bin.000003:4@mariadb:", Position{}, true, "want mariadb:<server_id>"},
		{"mysql-bin.000003:4@mariadb:x1", Position{}, true, "want mariadb:<server_id>"},
		{"mysql-bin.000003:4@mariadb:4294967296", Position{}, true, "below 2^32"},
		{"mysql-bin.000003:4@mysql:1234", Position{}, true, "want mysql:<server_uuid>"},
		{"mysql-bin.000003:4@mysql:" + testUUID + "x", Position{}, true, "want mysql:<server_uuid>"},
		{"mysql-bin.000003:4@postgres:1", Position{}, true, "want mariadb:<server_id> or mysql:<server_uuid>"},
		{"mysql-bin.000003:4@2", Position{}, true, "want mariadb:<server_id> or mysql:<server_uuid>"},
		{"0-1-5@mariadb:1", Position{}, true, "a GTID set is of no one server"},
		{"@mariadb:1", Position{}, true, "want file:pos@server"},
	} {
		got, isFile, err := ParseServerFilePos(tt.in)
		switch {
		case tt.errHas == "" && err != nil, tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)):
			t.Errorf("ParseServerFilePos(%q): error %v, want one saying %q", tt.in, err, tt.errHas)
		case err != nil && !errors.Is(err, ErrFilePos):
			t.Errorf("ParseServerFilePos(%q): error %v does not wrap ErrFilePos", tt.in, err)
		case got != tt.want || isFile != tt.isFile:
			t.Errorf("ParseServerFilePos(%q) = %+v, %v; want %+v, %v", tt.in, got, isFile, tt.want, tt.isFile)
		}
	}
}

// TestParseGTIDSet: GTID sets of both flavors are told apart by shape and
// returned in canonical form; malformed ones, empty elements and a MariaDB
// position with two GTIDs of one domain are refused, saying why.
func TestParseGTIDSet(t *testing.T) {
	for _, tt := range []struct {
		in, set, flavor string
		errHas          string
	}{
		{"0-1-57", "0-1-57", FlavorMariaDB, ""},
		{"1-2-9, 0-1-57", "0-1-57,1-2-9", FlavorMariaDB, ""},
		{testUUID + ":1-57", testUUID + ":1-57", FlavorMySQL, ""},
		{strings.ToUpper(testUUID) + ":1-5:7-9,\n" + testUUID[:35] + "3:1", testUUID + ":1-5:7-9," + testUUID[:35] + "3:1", FlavorMySQL, ""},
		{"", "", "", "empty element"},
		{"0-1-57,", "", "", "empty element"},
		{"0-1", "", "", "not a MariaDB GTID position"},
		{"0-1-x", "", "", "not a MariaDB GTID position"},
		{"nowhere", "", "", "not a MariaDB GTID position"},
		{"0-1-57,0-2-60", "", "", "two GTIDs of domain 0"},
		{"1-2-3,0-0-0", "", "", "names no transaction"},
		{testUUID + ":", "", "", "not a MySQL GTID set"},
		{testUUID + ":5-1", "", "", "not a MySQL GTID set"},
		{"3e11fa47:1-5", "", "", "not a MySQL GTID set"},
	} {
		set, flavor, err := ParseGTIDSet(tt.in)
		switch {
		case tt.errHas == "" && err != nil, tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)):
			t.Errorf("ParseGTIDSet(%q): error %v, want one saying %q", tt.in, err, tt.errHas)
		case err != nil && !errors.Is(err, ErrGTIDSet):
			t.Errorf("ParseGTIDSet(%q): error %v does not wrap ErrGTIDSet", tt.in, err)
		case set != tt.set || flavor != tt.flavor:
			t.Errorf("ParseGTIDSet(%q) = %q, %q; want %q, %q", tt.in, set, flavor, tt.set, tt.flavor)
		}
	}
}

// TestResumePointOfAReset: where Run starts after an operator's reset,
// stored as the caller's position: a GTID set alone is resumed from when
// the checkpoint's GTID state is in it, a file position of the
// checkpoint's server when it is later by file number (never as text),
// and the checkpoint wins otherwise.
func TestResumePointOfAReset(t *testing.T) {
	cp := Position{File: "mysql-bin.999999", Pos: 900, GTID: "0-1-100", Server: "mariadb:1"}
	for _, tt := range []struct {
		name     string
		from     Position
		wantFrom bool
	}{
		{"GTID set past the checkpoint", Position{GTID: "0-1-120"}, true},
		{"GTID set with another domain too", Position{GTID: "0-1-100,1-3-4"}, true},
		{"GTID set of the checkpoint", Position{GTID: "0-1-100"}, false},
		{"GTID set behind it", Position{GTID: "0-1-90"}, false},
		{"next file by number", Position{File: "mysql-bin.1000000", Pos: 4, GTID: "0-1-101", Server: "mariadb:1"}, true},
		{"next file, no GTID, server unknown", Position{File: "mysql-bin.1000000", Pos: 4}, true},
		{"shorter number, later as text", Position{File: "mysql-bin.99999", Pos: 9000, Server: "mariadb:1"}, false},
		{"another server's file, later GTID", Position{File: "mysql-bin.000001", Pos: 4, GTID: "0-1-130", Server: "mariadb:2"}, true},
		{"another server's file, no GTID", Position{File: "mysql-bin.1000000", Pos: 4, Server: "mariadb:2"}, false},
	} {
		want := cp
		if tt.wantFrom {
			want = tt.from
		}
		if got := resumePoint(FlavorMariaDB, tt.from, cp); got != want {
			t.Errorf("%s: resumePoint(%s, %s) = %s, want %s", tt.name, tt.from, cp, got, want)
		}
	}
}

// FuzzParsePosition: the parsers of what operators type never panic, and
// what they return parses again to itself.
func FuzzParsePosition(f *testing.F) {
	for _, s := range []string{
		"mysql-bin.000003:4", "mysql-bin.000003:4@mariadb:2", "mysql-bin.1000000:4@mysql:" + testUUID,
		"0-1-57,1-2-9", testUUID + ":1-5:7-9", "@", "a.1:4@@mariadb:1", "0-1-57,,", ":", "x.1:99999999999",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if p, isFile, err := ParseServerFilePos(s); isFile && err == nil {
			in := p.File + ":" + strconv.FormatUint(uint64(p.Pos), 10)
			if p.Server != "" {
				in += "@" + p.Server
			}
			if q, _, err := ParseServerFilePos(in); err != nil || q != p {
				t.Errorf("%q parsed to %+v, whose text %q parses to %+v, %v", s, p, in, q, err)
			}
		}
		if set, flavor, err := ParseGTIDSet(s); err == nil {
			if again, f2, err := ParseGTIDSet(set); err != nil || again != set || f2 != flavor {
				t.Errorf("%q parsed to %q (%s), which parses to %q (%s), %v", s, set, flavor, again, f2, err)
			}
		}
	})
}
