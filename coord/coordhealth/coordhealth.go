package coordhealth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// Errors of the package.
var (
	// ErrNotAllowed: the server has the word disabled (ZooKeeper's
	// 4lw.commands.whitelist, shepherd coord's --4lw).
	ErrNotAllowed = errors.New("coordhealth: four-letter word not allowed by the server")
	// ErrBadAnswer: the answer is not what the word returns.
	ErrBadAnswer = errors.New("coordhealth: malformed four-letter-word answer")
)

// MaxAnswer bounds the answer Ask reads: a server's srvr or mntr is a
// few hundred bytes; a larger answer (wchc, dump of a big server) is cut
// there rather than grow without bound.
const MaxAnswer = 4 << 20

// DefaultTimeout bounds an Ask whose context has no deadline.
const DefaultTimeout = 5 * time.Second

// notAllowed ends the answer of a server that has the word disabled;
// both servers word it so.
const notAllowed = "is not executed because it is not in the whitelist."

// Ask sends word to the server at addr (host:port) and returns its whole
// answer: the server closes the connection after it. The answer is read
// up to MaxAnswer bytes, within ctx's deadline or DefaultTimeout. A
// disabled word is ErrNotAllowed, with the server's answer.
func Ask(ctx context.Context, addr, word string) (string, error) {
	if len(word) != 4 {
		return "", fmt.Errorf("coordhealth: %q is not a four-letter word (srvr, mntr, ruok …)", word)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("coordhealth: %s to %s: %w: is a ZooKeeper or shepherd coord server listening there?", word, addr, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if _, err := io.WriteString(c, word); err != nil {
		return "", fmt.Errorf("coordhealth: %s to %s: %w", word, addr, err)
	}
	b, err := io.ReadAll(io.LimitReader(c, MaxAnswer))
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		if errors.Is(err, context.Canceled) {
			return "", err
		}
		return "", fmt.Errorf("coordhealth: %s to %s: reading the answer: %w", word, addr, err)
	}
	answer := string(b)
	if strings.Contains(answer, notAllowed) {
		return answer, fmt.Errorf("%w: %s: %s (enable it with 4lw.commands.whitelist in zoo.cfg, or --4lw on shepherd coord)",
			ErrNotAllowed, addr, strings.TrimSpace(answer))
	}
	return answer, nil
}

// Fields splits the key/value lines of an answer: mntr's "key<TAB>value",
// srvr's and stat's "Key: value", conf's and envi's "key=value". It is
// nil for the words whose answers are not key/value lines.
func Fields(word, answer string) map[string]string {
	var sep string
	switch word {
	case "mntr":
		sep = "\t"
	case "srvr", "stat":
		sep = ": "
	case "conf", "envi":
		sep = "="
	default:
		return nil
	}
	out := map[string]string{}
	for line := range strings.SplitSeq(answer, "\n") {
		k, v, ok := strings.Cut(line, sep)
		if k = strings.TrimSpace(k); !ok || k == "" {
			continue
		}
		out[k] = strings.TrimSpace(v)
	}
	return out
}

// LatencyStats is srvr's "Latency min/avg/max" in milliseconds.
type LatencyStats struct {
	Min float64 `json:"min"`
	Avg float64 `json:"avg"`
	Max float64 `json:"max"`
}

// Server is the health of one coordination server as Probe reads it.
type Server struct {
	Addr  string `json:"addr"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// Mode is standalone, leader, follower (or observer, read-only).
	Mode        string       `json:"mode,omitempty"`
	Version     string       `json:"version,omitempty"`
	Latency     LatencyStats `json:"latency"`
	Outstanding int64        `json:"outstanding"`
	Znodes      int64        `json:"znodes"`
	// Watches is mntr's zk_watch_count, when the server allows mntr.
	Watches     int64 `json:"watches,omitempty"`
	Connections int64 `json:"connections"`
	// Raw holds every key of the answers (srvr's and, if read, mntr's).
	Raw map[string]string `json:"raw,omitempty"`
}

// ParseSrvr reads a srvr answer. Fields a server leaves out stay zero;
// an answer without Mode is ErrBadAnswer.
func ParseSrvr(answer string) (Server, error) {
	f := Fields("srvr", answer)
	mode, ok := f["Mode"]
	if !ok {
		return Server{}, fmt.Errorf("%w: srvr: no Mode line in %q", ErrBadAnswer, clip(answer))
	}
	s := Server{Mode: mode, Raw: f}
	// "3.8.0-<hash>, built on <date>": the version is before the comma.
	s.Version, _, _ = strings.Cut(f["Zookeeper version"], ",")
	var err error
	if lat, ok := f["Latency min/avg/max"]; ok {
		parts := strings.Split(lat, "/")
		if len(parts) != 3 {
			return Server{}, fmt.Errorf("%w: srvr: latency %q: want min/avg/max", ErrBadAnswer, lat)
		}
		for i, dst := range []*float64{&s.Latency.Min, &s.Latency.Avg, &s.Latency.Max} {
			if *dst, err = strconv.ParseFloat(parts[i], 64); err != nil {
				return Server{}, fmt.Errorf("%w: srvr: latency %q: %v", ErrBadAnswer, lat, err)
			}
		}
	}
	for key, dst := range map[string]*int64{"Outstanding": &s.Outstanding, "Node count": &s.Znodes, "Connections": &s.Connections} {
		v, ok := f[key]
		if !ok {
			continue
		}
		if *dst, err = strconv.ParseInt(v, 10, 64); err != nil {
			return Server{}, fmt.Errorf("%w: srvr: %s %q: %v", ErrBadAnswer, key, v, err)
		}
	}
	return s, nil
}

// ParseMntr reads a mntr answer into its keys and values. An answer
// without zk_version is ErrBadAnswer.
func ParseMntr(answer string) (map[string]string, error) {
	f := Fields("mntr", answer)
	if _, ok := f["zk_version"]; !ok {
		return nil, fmt.Errorf("%w: mntr: no zk_version line in %q", ErrBadAnswer, clip(answer))
	}
	return f, nil
}

// Probe reads the health of the server at addr: srvr, then mntr for the
// watch count if the server allows it (a server may allow srvr alone,
// the default of both servers). It never fails: a server that does not
// answer srvr is !OK with Error saying why.
func Probe(ctx context.Context, addr string) Server {
	answer, err := Ask(ctx, addr, "srvr")
	if err != nil {
		return Server{Addr: addr, Error: err.Error()}
	}
	s, err := ParseSrvr(answer)
	if err != nil {
		return Server{Addr: addr, Error: fmt.Sprintf("%s: %v", addr, err)}
	}
	s.Addr, s.OK = addr, true
	answer, err = Ask(ctx, addr, "mntr")
	if err != nil {
		return s // mntr is optional
	}
	m, err := ParseMntr(answer)
	if err != nil {
		return s
	}
	for k, v := range m {
		s.Raw[k] = v
	}
	if w, err := strconv.ParseInt(m["zk_watch_count"], 10, 64); err == nil {
		s.Watches = w
	}
	return s
}

// ProbeAll probes each server of addrs concurrently, in their order.
func ProbeAll(ctx context.Context, addrs []string) []Server {
	out := make([]Server, len(addrs))
	done := make(chan struct{})
	for i, a := range addrs {
		go func() {
			out[i] = Probe(ctx, a)
			done <- struct{}{}
		}()
	}
	for range addrs {
		<-done
	}
	return out
}

// Servers returns the host:port of each server of a connect string
// (host:port[,host:port…][/chroot]).
func Servers(connect string) ([]string, error) {
	hosts, _, _ := strings.Cut(connect, "/")
	var out []string
	for h := range strings.SplitSeq(hosts, ",") {
		if _, _, err := net.SplitHostPort(h); err != nil || h == "" {
			return nil, fmt.Errorf("coordhealth: connect string %q: server %q: want host:port[,host:port…][/chroot]", connect, h)
		}
		out = append(out, h)
	}
	return out, nil
}

// clip shortens an answer quoted in an error.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
