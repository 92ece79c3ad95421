package compat

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/shepherd-dev/shepherd/coord/coordhealth"
)

// TestFourLetterWords checks the admin words: ruok and isro answer
// exactly; the others must have the same shape (the same keys, sections
// and line formats) while their values are the server's own.
func TestFourLetterWords(t *testing.T) {
	compare(t, "four-letter-words", func(s *script) {
		// Something for cons, wchs and dump to report.
		c := s.session()
		c.create(s.root, nil, 0)
		c.create(s.p("eph"), nil, 1)
		c.existsW(s.p("eph"))
		for _, word := range []string{"ruok", "isro", "srvr", "stat", "mntr", "conf", "envi", "cons", "wchs", "dump"} {
			ans, err := coordhealth.Ask(context.Background(), s.tg.addr, word)
			if err != nil && !errors.Is(err, coordhealth.ErrNotAllowed) { // a refusal has its shape too
				s.tr.add("%s -> error", word)
				s.t.Logf("%s: %s: %v", s.tg.name, word, err)
				continue
			}
			for _, l := range shapeOf(word, ans) {
				s.tr.add("%s %s", word, l)
			}
		}
	})
}

var (
	digitsRE = regexp.MustCompile(`[0-9]+`)
	hexRE    = regexp.MustCompile(`0x[0-9a-f]+`)
	dateRE   = regexp.MustCompile(`[A-Z][a-z]{2} [A-Z][a-z]{2} +[0-9]+ [0-9:]+ [A-Z]+ [0-9]{4}`)
	// ZooKeeper writes lop=null for a connection that has not completed
	// an operation yet: another scenario's, connecting at that moment.
	lastOpRE = regexp.MustCompile(`lop=[A-Za-z]+`)
	pathRE   = regexp.MustCompile(`^\t/.*`)
)

// mntrKeys are the mntr keys ZooKeeper's administrator guide documents for
// a standalone server, which monitoring tools read. ZooKeeper 3.8 prints
// some 400 more (histograms of its internal queues, per-namespace
// counters named after the scenarios running at that moment); those are
// not part of the contract.
var mntrKeys = []string{
	"zk_approximate_data_size", "zk_avg_latency", "zk_ephemerals_count",
	"zk_max_file_descriptor_count", "zk_max_latency", "zk_min_latency",
	"zk_num_alive_connections", "zk_open_file_descriptor_count",
	"zk_outstanding_requests", "zk_packets_received", "zk_packets_sent",
	"zk_server_state", "zk_version", "zk_watch_count", "zk_znode_count",
}

// shapeOf reduces a four-letter-word answer to what two correct servers
// share. Key/value words keep their keys; listing words keep the distinct
// forms of their lines with numbers, ids, dates, last operations and
// paths masked, because other scenarios' connections show in them. Lines
// are sorted and deduplicated: the set of keys matters, their order and
// the number of clients connected at that moment do not.
func shapeOf(word, ans string) []string {
	switch word {
	case "ruok", "isro":
		return []string{"= " + strings.TrimSpace(ans)}
	case "mntr":
		return mntrShape(ans)
	}
	var out []string
	for _, l := range strings.Split(ans, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		out = append(out, lineShape(word, l))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func mntrShape(ans string) []string {
	have := map[string]bool{}
	for _, l := range strings.Split(ans, "\n") {
		if k, _, ok := strings.Cut(l, "\t"); ok {
			have[k] = true
		}
	}
	out := make([]string, len(mntrKeys))
	for i, k := range mntrKeys {
		if have[k] {
			out[i] = "key " + k
		} else {
			out[i] = "key " + k + " missing"
		}
	}
	return out
}

func lineShape(word, l string) string {
	switch word {
	case "conf", "envi":
		if k, _, ok := strings.Cut(l, "="); ok {
			return "key " + k
		}
	case "srvr", "stat":
		if k, _, ok := strings.Cut(l, ": "); ok && !strings.HasPrefix(l, " ") {
			return "key " + k
		}
	}
	// Listings (cons, dump, wchs, stat's client list): mask what varies.
	l = pathRE.ReplaceAllString(l, "\t<path>")
	l = dateRE.ReplaceAllString(l, "<date>")
	l = lastOpRE.ReplaceAllString(l, "lop=<op>")
	l = hexRE.ReplaceAllString(l, "<hex>")
	l = digitsRE.ReplaceAllString(l, "#")
	return "line " + l
}
