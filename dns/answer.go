package dns

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mdns "github.com/miekg/dns"
)

// Strategy is how A and AAAA answers choose among a name's addresses.
type Strategy string

// Strategies.
const (
	// All answers with every served address, in a random order.
	All Strategy = "all"
	// Weighted answers with one address, drawn with probability
	// proportional to its weight.
	Weighted Strategy = "weighted"
	// One answers with one address, each in turn (round robin).
	One Strategy = "one"
)

// ParseStrategy parses --strategy.
func ParseStrategy(s string) (Strategy, error) {
	switch st := Strategy(s); st {
	case All, Weighted, One:
		return st, nil
	}
	return "", fmt.Errorf("dns: strategy %q: want all, weighted or one", s)
}

// target is one served address as answers use it.
type target struct {
	ip     netip.Addr
	port   uint16
	weight int
	meta   map[string]string
	host   string // the SRV target name, ip-<address>.<name>
}

// entry is one name's served addresses, built once per change of the
// name (newEntry) and shared by the tables that follow.
type entry struct {
	name  Name
	fq    string // the domain, fully qualified
	addrs []target
	hosts map[string]target // SRV target label (ip-…) -> its address
	// conflict: two applications registered this name.
	conflict string
}

// Table is the immutable answer table the server reads without a lock:
// every name of the zone and its served addresses. Loaded is false for
// the table of a cache that has never read the tree, whose every answer
// is SERVFAIL.
type Table struct {
	zone    string // lower-case, fully qualified
	names   map[string]*entry
	parents map[string]bool // names with names below them (empty non-terminals)
	loaded  bool
	serial  uint32
	// Outside counts registered names not inside the zone (not served).
	Outside int
	// Addresses is the number of served addresses.
	Addresses int
}

var hostReplacer = strings.NewReplacer(".", "-", ":", "-")

// hostLabel is the SRV target label of ip: ip-10-0-0-1, ip-fd00--1.
func hostLabel(ip netip.Addr) string { return "ip-" + hostReplacer.Replace(ip.String()) }

// newEntry builds the entry of s's name, nil if it is outside zone.
func newEntry(zone string, s ServiceStatus) *entry {
	fq := mdns.Fqdn(s.Domain)
	if !mdns.IsSubDomain(zone, fq) {
		return nil
	}
	e := &entry{name: s.Name, fq: fq, hosts: map[string]target{}}
	for _, a := range s.served() {
		ap, err := ParseAddr(a.Addr)
		if err != nil {
			continue
		}
		label := hostLabel(ap.Addr())
		tg := target{ip: ap.Addr(), port: ap.Port(), weight: a.Weight, meta: a.Meta, host: label + "." + fq}
		e.addrs = append(e.addrs, tg)
		e.hosts[label] = tg
	}
	return e
}

// NewTable builds the answer table of zone from the services read.
func NewTable(zone string, services []ServiceStatus, serial uint32) *Table {
	zone = mdns.CanonicalName(zone)
	entries := make([]*entry, len(services))
	for i, s := range services {
		entries[i] = newEntry(zone, s)
	}
	return tableOf(zone, entries, serial)
}

// tableOf builds a table from entries (nil: a name outside the zone),
// sharing them: a change rebuilds the changed name's entry only.
func tableOf(zone string, entries []*entry, serial uint32) *Table {
	t := &Table{zone: zone, names: make(map[string]*entry, len(entries)), parents: map[string]bool{}, loaded: true, serial: serial}
	for _, e := range entries {
		if e == nil {
			t.Outside++
			continue
		}
		if prev, ok := t.names[e.fq]; ok {
			apps := []string{prev.name.App, e.name.App}
			slices.Sort(apps)
			t.names[e.fq] = &entry{name: prev.name, fq: e.fq, conflict: fmt.Sprintf("name %s is registered by applications %s and %s", e.name.Domain, apps[0], apps[1])}
			continue
		}
		t.names[e.fq] = e
		for p := e.fq; p != zone; {
			i := strings.IndexByte(p, '.')
			p = p[i+1:]
			if p == "" || t.parents[p] {
				break
			}
			t.parents[p] = true
		}
	}
	for _, e := range t.names {
		if e.conflict == "" {
			t.Addresses += len(e.addrs)
		}
	}
	return t
}

// emptyTable is the table of a cache never loaded.
func emptyTable(zone string) *Table {
	return &Table{zone: mdns.CanonicalName(zone), names: map[string]*entry{}, parents: map[string]bool{}}
}

// Loaded reports whether the table was read from the tree.
func (t *Table) Loaded() bool { return t.loaded }

// Answerer answers queries from a table: the strategy, the TTL of the
// records, and the round-robin counters that outlive tables.
type Answerer struct {
	Strategy Strategy
	TTL      time.Duration
	rr       sync.Map // name -> *atomic.Uint64
}

// Answer is the reply to q from t: its rcode and records. A name that
// exists but has no record of the type asked is NOERROR with no answer
// (NODATA); negative answers carry the zone's SOA.
func (an *Answerer) Answer(t *Table, q mdns.Question) (rcode int, answer, extra, ns []mdns.RR) {
	if !t.loaded {
		return mdns.RcodeServerFailure, nil, nil, nil
	}
	qname := mdns.CanonicalName(q.Name)
	if !mdns.IsSubDomain(t.zone, qname) {
		return mdns.RcodeRefused, nil, nil, nil
	}
	ttl := uint32(an.TTL / time.Second)
	if q.Qtype == mdns.TypeSRV { // _service._proto.name asks about name
		for strings.HasPrefix(qname, "_") {
			qname = qname[strings.IndexByte(qname, '.')+1:]
		}
	}
	soa := []mdns.RR{t.soa(ttl)}
	if e, ok := t.names[qname]; ok {
		if e.conflict != "" {
			return mdns.RcodeServerFailure, nil, nil, nil
		}
		switch q.Qtype {
		case mdns.TypeA, mdns.TypeAAAA:
			answer = an.addresses(q, qname, e, ttl)
		case mdns.TypeSRV:
			answer, extra = an.srv(q, qname, e, ttl)
		case mdns.TypeTXT:
			answer = txt(q, qname, e, ttl)
		}
		if len(answer) == 0 {
			return mdns.RcodeSuccess, nil, nil, soa
		}
		return mdns.RcodeSuccess, answer, extra, nil
	}
	if label, parent, ok := strings.Cut(qname, "."); ok && strings.HasPrefix(label, "ip-") {
		if e, ok := t.names[parent]; ok && e.conflict == "" {
			if h, ok := e.hosts[label]; ok {
				if rr := addressRR(q.Name, h.ip, q.Qtype, ttl); rr != nil {
					return mdns.RcodeSuccess, []mdns.RR{rr}, nil, nil
				}
				return mdns.RcodeSuccess, nil, nil, soa
			}
		}
	}
	if qname == t.zone {
		if q.Qtype == mdns.TypeSOA {
			return mdns.RcodeSuccess, soa, nil, nil
		}
		return mdns.RcodeSuccess, nil, nil, soa
	}
	if t.parents[qname] {
		return mdns.RcodeSuccess, nil, nil, soa
	}
	return mdns.RcodeNameError, nil, nil, soa
}

func (t *Table) soa(ttl uint32) mdns.RR {
	return &mdns.SOA{
		Hdr: mdns.RR_Header{Name: t.zone, Rrtype: mdns.TypeSOA, Class: mdns.ClassINET, Ttl: ttl},
		Ns:  "ns." + t.zone, Mbox: "hostmaster." + t.zone,
		Serial: t.serial, Refresh: 60, Retry: 30, Expire: 600, Minttl: ttl,
	}
}

// addressRR is the A or AAAA record of ip for name, nil if ip is not of
// the family asked.
func addressRR(name string, ip netip.Addr, qtype uint16, ttl uint32) mdns.RR {
	hdr := mdns.RR_Header{Name: name, Rrtype: qtype, Class: mdns.ClassINET, Ttl: ttl}
	switch {
	case qtype == mdns.TypeA && ip.Is4():
		return &mdns.A{Hdr: hdr, A: ip.AsSlice()}
	case qtype == mdns.TypeAAAA && ip.Is6():
		return &mdns.AAAA{Hdr: hdr, AAAA: ip.AsSlice()}
	}
	return nil
}

// addresses answers A or AAAA by the strategy.
func (an *Answerer) addresses(q mdns.Question, qname string, e *entry, ttl uint32) []mdns.RR {
	var fam []target
	for _, a := range e.addrs {
		if (q.Qtype == mdns.TypeA) == a.ip.Is4() {
			fam = append(fam, a)
		}
	}
	if len(fam) == 0 {
		return nil
	}
	switch an.Strategy {
	case One:
		v, _ := an.rr.LoadOrStore(qname+"/"+mdns.TypeToString[q.Qtype], new(atomic.Uint64))
		i := v.(*atomic.Uint64).Add(1) - 1
		fam = []target{fam[i%uint64(len(fam))]}
	case Weighted:
		fam = []target{pickWeighted(fam, rand.IntN)}
	default:
		fam = slices.Clone(fam)
		rand.Shuffle(len(fam), func(i, j int) { fam[i], fam[j] = fam[j], fam[i] })
	}
	out := make([]mdns.RR, 0, len(fam))
	for _, a := range fam {
		out = append(out, addressRR(q.Name, a.ip, q.Qtype, ttl))
	}
	return out
}

// pickWeighted draws one of ts with probability proportional to its
// weight; intn is rand.IntN (a test's own in tests).
func pickWeighted(ts []target, intn func(int) int) target {
	total := 0
	for _, t := range ts {
		total += t.weight
	}
	if total <= 0 {
		return ts[0]
	}
	n := intn(total)
	for _, t := range ts {
		if n < t.weight {
			return t
		}
		n -= t.weight
	}
	return ts[len(ts)-1]
}

// srv answers SRV with every served address (clients weigh them), and the
// targets' addresses as extra records.
func (an *Answerer) srv(q mdns.Question, qname string, e *entry, ttl uint32) (answer, extra []mdns.RR) {
	for _, a := range e.addrs {
		answer = append(answer, &mdns.SRV{
			Hdr:      mdns.RR_Header{Name: q.Name, Rrtype: mdns.TypeSRV, Class: mdns.ClassINET, Ttl: ttl},
			Priority: 0, Weight: uint16(a.weight), Port: a.port, Target: a.host,
		})
		if a.ip.Is4() {
			extra = append(extra, addressRR(a.host, a.ip, mdns.TypeA, ttl))
		} else {
			extra = append(extra, addressRR(a.host, a.ip, mdns.TypeAAAA, ttl))
		}
	}
	return answer, extra
}

// txt answers TXT: one record per served address, its address, weight and
// metadata as key=value strings.
func txt(q mdns.Question, qname string, e *entry, ttl uint32) []mdns.RR {
	var out []mdns.RR
	for _, a := range e.addrs {
		strs := []string{"addr=" + netip.AddrPortFrom(a.ip, a.port).String(), fmt.Sprintf("weight=%d", a.weight)}
		keys := make([]string, 0, len(a.meta))
		for k := range a.meta {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			s := k + "=" + a.meta[k]
			if len(s) > 255 {
				s = s[:255]
			}
			strs = append(strs, s)
		}
		out = append(out, &mdns.TXT{Hdr: mdns.RR_Header{Name: q.Name, Rrtype: mdns.TypeTXT, Class: mdns.ClassINET, Ttl: ttl}, Txt: strs})
	}
	return out
}
