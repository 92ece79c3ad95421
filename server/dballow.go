package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/shepherd-dev/shepherd/core"
)

// ErrConfig reports a console Config that cannot work; the message names
// the flag.
var ErrConfig = errors.New("server: invalid configuration")

// dbAllow is the --db-allow list: the database hosts a task spec or a dry
// run may name through this console. The zero value allows every host.
//
// Host names are compared as written, never resolved: resolving here and
// again when a core connects could give two answers (DNS rebinding), so
// an IP range does not admit a name that resolves into it; list the name.
type dbAllow struct {
	prefixes []netip.Prefix
	names    map[string]bool // lower case, without a trailing dot
}

// parseDBAllow reads entries: CIDRs (10.0.0.0/8), IP addresses and host
// names (db1.example.com).
func parseDBAllow(entries []string) (dbAllow, error) {
	var a dbAllow
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if pfx, err := netip.ParsePrefix(e); err == nil {
			a.prefixes = append(a.prefixes, pfx.Masked())
			continue
		}
		if ip, err := netip.ParseAddr(e); err == nil {
			a.prefixes = append(a.prefixes, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
			continue
		}
		name := hostName(e)
		if !validHostName(name) {
			return dbAllow{}, fmt.Errorf("%w: --db-allow %q: want a CIDR (10.0.0.0/8), an IP address or a host name (db1.example.com)", ErrConfig, e)
		}
		if a.names == nil {
			a.names = map[string]bool{}
		}
		a.names[name] = true
	}
	return a, nil
}

// ValidateDBAllow checks a --db-allow list as New would, so that a
// command can refuse a bad entry before it connects anywhere.
func ValidateDBAllow(entries []string) error {
	_, err := parseDBAllow(entries)
	return err
}

func hostName(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

func validHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
				return false
			}
		}
	}
	return true
}

// allows reports whether host is on the list (every host when it is
// empty).
func (a dbAllow) allows(host string) bool {
	if len(a.prefixes) == 0 && len(a.names) == 0 {
		return true
	}
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		ip = ip.Unmap()
		for _, p := range a.prefixes {
			if p.Contains(ip) {
				return true
			}
		}
		return false
	}
	return a.names[hostName(host)]
}

// check refuses a spec naming a database host off the list, with a 400
// naming the field. The list itself is not shown: it maps the network.
func (a dbAllow) check(sp *core.Spec) error {
	type named struct{ field, host string }
	hosts := []named{{"source.host", sp.Source.Host}, {"target.host", sp.Target.Host}}
	for i, e := range sp.Source.Candidates()[1:] {
		hosts = append(hosts, named{fmt.Sprintf("source.hosts[%d]", i), e.Host})
	}
	for _, e := range hosts {
		if !a.allows(e.host) {
			return errorf(http.StatusBadRequest, "host_not_allowed", fmt.Sprintf("%s %q is not in this console's --db-allow list of database hosts: use an allowed host, or ask the console's operator to add it", e.field, e.host))
		}
	}
	return nil
}
