package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/shepherd-dev/shepherd/core"
	"github.com/shepherd-dev/shepherd/internal/hostallow"
)

// ErrConfig reports a console Config that cannot work; the message names
// the flag.
var ErrConfig = errors.New("server: invalid configuration")

// dbAllow is the --db-allow list: the hosts a task spec or a dry run may
// name through this console — databases, and a NATS or Kafka target's
// servers. The zero value allows every host.
// Host names are compared as written, never resolved (internal/hostallow).
type dbAllow struct {
	list hostallow.List
}

// parseDBAllow reads entries: CIDRs (10.0.0.0/8), IP addresses and host
// names (db1.example.com).
func parseDBAllow(entries []string) (dbAllow, error) {
	l, err := hostallow.Parse(entries)
	if err != nil {
		return dbAllow{}, fmt.Errorf("%w: --db-allow %s", ErrConfig, strings.TrimPrefix(err.Error(), "hostallow: bad entry: "))
	}
	return dbAllow{list: l}, nil
}

// ValidateDBAllow checks a --db-allow list as New would, so that a
// command can refuse a bad entry before it connects anywhere.
func ValidateDBAllow(entries []string) error {
	_, err := parseDBAllow(entries)
	return err
}

// allows reports whether host is on the list (every host when it is
// empty).
func (a dbAllow) allows(host string) bool {
	return a.list.Empty() || a.list.Contains(host)
}

// check refuses a spec naming a database host off the list, with a 400
// naming the field. The list itself is not shown: it maps the network.
func (a dbAllow) check(sp *core.Spec) error {
	type named struct{ field, host string }
	hosts := []named{{"source.host", sp.Source.Host}}
	for i, e := range sp.Source.Candidates()[1:] {
		hosts = append(hosts, named{fmt.Sprintf("source.hosts[%d]", i), e.Host})
	}
	// A NATS or Kafka target's servers are checked as a database's are:
	// a console user must not make the cores send rows anywhere else.
	for _, ts := range sp.Target.Servers() {
		hosts = append(hosts, named{ts.Field, ts.Host})
	}
	for _, e := range hosts {
		if !a.allows(e.host) {
			return errorf(http.StatusBadRequest, "host_not_allowed", fmt.Sprintf("%s %q is not in this console's --db-allow list of hosts tasks may name: use an allowed host, or ask the console's operator to add it", e.field, e.host))
		}
	}
	return nil
}
