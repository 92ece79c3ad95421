// Package hostallow is a list of network hosts a process may reach on
// behalf of what it reads from the coordination service: CIDRs, IP
// addresses and host names. The console's --db-allow and the
// scheduler's --http-allow are such lists.
//
// Host names are compared as written, never resolved: resolving here and
// again when connecting could give two answers (DNS rebinding), so an IP
// range does not admit a name that resolves into it; list the name.
package hostallow

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ErrEntry reports an entry that is neither a CIDR, an IP address nor a
// host name.
var ErrEntry = errors.New("hostallow: bad entry")

// List is a parsed allow-list. The zero value is empty.
type List struct {
	prefixes []netip.Prefix
	names    map[string]bool // lower case, without a trailing dot
}

// Parse reads entries: CIDRs (10.0.0.0/8), IP addresses and host names
// (db1.example.com). The error wraps ErrEntry and quotes the entry.
func Parse(entries []string) (List, error) {
	var a List
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
		if !ValidHostName(name) {
			return List{}, fmt.Errorf("%w: %q: want a CIDR (10.0.0.0/8), an IP address or a host name (db1.example.com)", ErrEntry, e)
		}
		if a.names == nil {
			a.names = map[string]bool{}
		}
		a.names[name] = true
	}
	return a, nil
}

// Empty reports whether the list has no entry.
func (a List) Empty() bool { return len(a.prefixes) == 0 && len(a.names) == 0 }

// Contains reports whether host — an IP address (in brackets or not) or
// a name — is on the list. An empty list contains nothing: what it
// means is the caller's (the console allows every database host then,
// the scheduler no HTTP host).
func (a List) Contains(host string) bool {
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

func hostName(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

// ValidHostName reports whether h (lower case) is a DNS host name.
func ValidHostName(h string) bool {
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
