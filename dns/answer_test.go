package dns

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
)

func testServices() []ServiceStatus {
	return []ServiceStatus{
		{Name: Name{"app1", "api.svc.example"}, Addresses: []AddressStatus{
			{Addr: "10.0.0.1:80", Weight: 1, Healthy: true, Meta: map[string]string{"zone": "a"}},
			{Addr: "10.0.0.2:81", Weight: 3, Healthy: true},
			{Addr: "10.0.0.3:82", Weight: 1, Healthy: false},                      // unhealthy
			{Addr: "10.0.0.4:83", Weight: 1, Healthy: true, Blocked: &Mark{}},     // blocked
			{Addr: "10.0.0.5:84", Weight: 1, Healthy: true, Refused: "untrusted"}, // refused
			{Addr: "[fd00::1]:85", Weight: 2, Healthy: true},
		}},
		{Name: Name{"app1", "down.svc.example"}, Addresses: []AddressStatus{{Addr: "10.0.1.1:80", Weight: 1}}},
		{Name: Name{"app1", "deep.a.b.svc.example"}, Addresses: []AddressStatus{{Addr: "10.0.2.1:80", Weight: 1, Healthy: true}}},
		{Name: Name{"app2", "elsewhere.example.org"}, Addresses: []AddressStatus{{Addr: "10.0.3.1:80", Weight: 1, Healthy: true}}},
		{Name: Name{"app2", "api.svc.example"}, Addresses: []AddressStatus{{Addr: "10.9.9.9:80", Weight: 1, Healthy: true}}},
		{Name: Name{"app3", "x.svc.example"}, Addresses: []AddressStatus{{Addr: "10.0.4.1:80", Weight: 1, Healthy: true}}},
	}
}

func ask(an *Answerer, t *Table, name string, qtype uint16) (int, []string, []string) {
	rcode, answer, extra, _ := an.Answer(t, mdns.Question{Name: name, Qtype: qtype, Qclass: mdns.ClassINET})
	var a, x []string
	for _, rr := range answer {
		a = append(a, rdata(rr))
	}
	for _, rr := range extra {
		x = append(x, rr.Header().Name+" "+rdata(rr))
	}
	slices.Sort(a)
	slices.Sort(x)
	return rcode, a, x
}

func rdata(rr mdns.RR) string {
	switch v := rr.(type) {
	case *mdns.A:
		return v.A.String()
	case *mdns.AAAA:
		return v.AAAA.String()
	case *mdns.SRV:
		return mdns.Field(v, 1) + " " + mdns.Field(v, 2) + " " + mdns.Field(v, 3) + " " + v.Target
	case *mdns.TXT:
		return mdns.Field(v, 1)
	case *mdns.SOA:
		return "SOA " + v.Hdr.Name
	}
	return rr.String()
}

// TestAnswers: what each name and type gets from a table, with the
// conflict of two applications on one name.
func TestAnswers(t *testing.T) {
	services := testServices()
	services = slices.DeleteFunc(services, func(s ServiceStatus) bool { return s.App == "app2" && s.Domain == "api.svc.example" })
	tbl := NewTable(testZone, services, 7)
	an := &Answerer{Strategy: All, TTL: 5 * time.Second}
	for _, tc := range []struct {
		name  string
		qtype uint16
		rcode int
		want  []string
		extra []string
	}{
		{"api.svc.example.", mdns.TypeA, mdns.RcodeSuccess, []string{"10.0.0.1", "10.0.0.2"}, nil},
		{"API.Svc.Example.", mdns.TypeA, mdns.RcodeSuccess, []string{"10.0.0.1", "10.0.0.2"}, nil},
		{"api.svc.example.", mdns.TypeAAAA, mdns.RcodeSuccess, []string{"fd00::1"}, nil},
		{"api.svc.example.", mdns.TypeSRV, mdns.RcodeSuccess,
			[]string{"0 1 80 ip-10-0-0-1.api.svc.example.", "0 2 85 ip-fd00--1.api.svc.example.", "0 3 81 ip-10-0-0-2.api.svc.example."},
			[]string{"ip-10-0-0-1.api.svc.example. 10.0.0.1", "ip-10-0-0-2.api.svc.example. 10.0.0.2", "ip-fd00--1.api.svc.example. fd00::1"}},
		{"_http._tcp.api.svc.example.", mdns.TypeSRV, mdns.RcodeSuccess,
			[]string{"0 1 80 ip-10-0-0-1.api.svc.example.", "0 2 85 ip-fd00--1.api.svc.example.", "0 3 81 ip-10-0-0-2.api.svc.example."},
			[]string{"ip-10-0-0-1.api.svc.example. 10.0.0.1", "ip-10-0-0-2.api.svc.example. 10.0.0.2", "ip-fd00--1.api.svc.example. fd00::1"}},
		{"ip-10-0-0-2.api.svc.example.", mdns.TypeA, mdns.RcodeSuccess, []string{"10.0.0.2"}, nil},
		{"ip-10-0-0-2.api.svc.example.", mdns.TypeAAAA, mdns.RcodeSuccess, nil, nil},
		{"api.svc.example.", mdns.TypeTXT, mdns.RcodeSuccess, []string{"addr=10.0.0.1:80 weight=1 zone=a", "addr=10.0.0.2:81 weight=3", "addr=[fd00::1]:85 weight=2"}, nil},
		{"api.svc.example.", mdns.TypeMX, mdns.RcodeSuccess, nil, nil},                       // NODATA
		{"down.svc.example.", mdns.TypeA, mdns.RcodeSuccess, nil, nil},                       // registered, nothing healthy
		{"a.b.svc.example.", mdns.TypeA, mdns.RcodeSuccess, nil, nil},                        // empty non-terminal
		{"svc.example.", mdns.TypeSOA, mdns.RcodeSuccess, []string{"SOA svc.example."}, nil}, // apex
		{"nope.svc.example.", mdns.TypeA, mdns.RcodeNameError, nil, nil},
		{"ip-10-0-0-3.api.svc.example.", mdns.TypeA, mdns.RcodeNameError, nil, nil}, // unhealthy: no target
		{"elsewhere.example.org.", mdns.TypeA, mdns.RcodeRefused, nil, nil},
	} {
		rcode, got, extra := ask(an, tbl, tc.name, tc.qtype)
		if rcode != tc.rcode || !slices.Equal(got, tc.want) || !slices.Equal(extra, tc.extra) {
			t.Errorf("%s %s: %s %q extra %q; want %s %q extra %q", tc.name, mdns.TypeToString[tc.qtype],
				mdns.RcodeToString[rcode], got, extra, mdns.RcodeToString[tc.rcode], tc.want, tc.extra)
		}
	}
	if tbl.Outside != 1 || tbl.Addresses != 5 {
		t.Errorf("outside %d addresses %d; want 1 and 5", tbl.Outside, tbl.Addresses)
	}

	// Two applications registering one name: SERVFAIL, not a guess.
	conflict := NewTable(testZone, testServices(), 1)
	if rcode, got, _ := ask(an, conflict, "api.svc.example.", mdns.TypeA); rcode != mdns.RcodeServerFailure {
		t.Errorf("conflicting name: %s %q; want SERVFAIL", mdns.RcodeToString[rcode], got)
	}
}

// TestAnswerNeverLoaded: a cache that never read the tree answers
// SERVFAIL, never NXDOMAIN.
func TestAnswerNeverLoaded(t *testing.T) {
	an := &Answerer{Strategy: All, TTL: time.Second}
	for _, name := range []string{"api.svc.example.", "svc.example."} {
		if rcode, _, _ := ask(an, emptyTable(testZone), name, mdns.TypeA); rcode != mdns.RcodeServerFailure {
			t.Errorf("%s from an unloaded table: %s; want SERVFAIL", name, mdns.RcodeToString[rcode])
		}
	}
}

// TestStrategies: all answers every address, one takes them in turn,
// weighted draws by weight.
func TestStrategies(t *testing.T) {
	tbl := NewTable(testZone, testServices()[:1], 1)
	one := &Answerer{Strategy: One, TTL: time.Second}
	var seq []string
	for range 4 {
		_, got, _ := ask(one, tbl, "api.svc.example.", mdns.TypeA)
		if len(got) != 1 {
			t.Fatalf("one: %q; want one address", got)
		}
		seq = append(seq, got[0])
	}
	if want := []string{"10.0.0.1", "10.0.0.2", "10.0.0.1", "10.0.0.2"}; !slices.Equal(seq, want) {
		t.Errorf("one: %q; want round robin %q", seq, want)
	}
	ts := []target{{ip: netip.MustParseAddr("10.0.0.1"), weight: 1}, {ip: netip.MustParseAddr("10.0.0.2"), weight: 3}}
	counts := map[string]int{}
	for n := range 4 { // every draw of rand.IntN(4), once
		counts[pickWeighted(ts, func(int) int { return n }).ip.String()]++
	}
	if counts["10.0.0.1"] != 1 || counts["10.0.0.2"] != 3 {
		t.Errorf("weighted draws %v; want 1 of 10.0.0.1 and 3 of 10.0.0.2", counts)
	}
	w := &Answerer{Strategy: Weighted, TTL: time.Second}
	if _, got, _ := ask(w, tbl, "api.svc.example.", mdns.TypeA); len(got) != 1 {
		t.Errorf("weighted: %q; want one address", got)
	}
}

// TestNamesAndAddresses: what the registry accepts.
func TestNamesAndAddresses(t *testing.T) {
	for _, tc := range []struct{ app, domain string }{{"App", "x.example"}, {"_scanner", "x.example"}, {"a", "-x.example"}, {"a", "x..example"}, {"a", ""}, {"a", "x_y.example"}} {
		if _, err := NewName(tc.app, tc.domain); err == nil {
			t.Errorf("NewName(%q, %q) accepted", tc.app, tc.domain)
		}
	}
	if n, err := NewName("app1", "Server.App1.Company1.com."); err != nil || n.Domain != "server.app1.company1.com" {
		t.Errorf("NewName: %v %v", n, err)
	}
	for _, s := range []string{"host:80", "10.0.0.1", "10.0.0.1:0", "10.0.0.1:70000", "[fe80::1%eth0]:80"} {
		if _, err := ParseAddr(s); err == nil {
			t.Errorf("ParseAddr(%q) accepted", s)
		}
	}
	if a, err := ParseAddr("[::ffff:10.0.0.1]:80"); err != nil || a.String() != "10.0.0.1:80" {
		t.Errorf("ParseAddr mapped: %v %v", a, err)
	}
}
