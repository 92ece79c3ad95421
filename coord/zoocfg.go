package coord

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// ErrEnsembleConfig is returned for zoo.cfg files that describe an
// ensemble: the bundled server is single-node by design.
var ErrEnsembleConfig = errors.New("coord: ensembles need Apache ZooKeeper")

// ParseZooCfg reads an Apache ZooKeeper zoo.cfg into cfg, so an operator can
// swap a standalone ZooKeeper for `shepherd coord` with the same file. Keys
// it does not know are reported as warnings (returned, not fatal), since a
// ZooKeeper config often carries JVM-only settings.
func ParseZooCfg(r io.Reader, cfg *Config) (warnings []string, err error) {
	var host, port string
	hasDataDir := false
	sc := bufio.NewScanner(r)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%w: zoo.cfg line %d: %q is not key=value", ErrConfig, lineNo, line)
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		bad := func(what string) error {
			return fmt.Errorf("%w: zoo.cfg line %d: %s=%q: %s", ErrConfig, lineNo, key, val, what)
		}
		switch {
		case strings.HasPrefix(key, "server."):
			return nil, fmt.Errorf("%w: zoo.cfg line %d: %q describes an ensemble member; `shepherd coord` is a single node — run Apache ZooKeeper for an ensemble and point Shepherd at it with --zk", ErrEnsembleConfig, lineNo, line)
		case key == "tickTime":
			ms, err := strconv.Atoi(val)
			if err != nil || ms <= 0 {
				return nil, bad("want a positive number of milliseconds")
			}
			cfg.TickTime = time.Duration(ms) * time.Millisecond
		case key == "dataDir":
			if val == "" {
				return nil, bad("want a directory")
			}
			cfg.DataDir, hasDataDir = val, true
		case key == "dataLogDir":
			cfg.DataLogDir = val
		case key == "clientPort":
			if n, err := strconv.Atoi(val); err != nil || n < 0 || n > 65535 {
				return nil, bad("want a port number")
			}
			port = val
		case key == "clientPortAddress":
			host = val
		case key == "maxClientCnxns":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return nil, bad("want a non-negative number")
			}
			cfg.MaxClientConns = n
		case key == "minSessionTimeout", key == "maxSessionTimeout":
			ms, err := strconv.Atoi(val)
			if err != nil {
				return nil, bad("want milliseconds")
			}
			if ms < 0 {
				continue // ZooKeeper's -1 means "derive from tickTime"
			}
			if key == "minSessionTimeout" {
				cfg.MinSessionTimeout = time.Duration(ms) * time.Millisecond
			} else {
				cfg.MaxSessionTimeout = time.Duration(ms) * time.Millisecond
			}
		case key == "snapCount":
			n, err := strconv.Atoi(val)
			if err != nil || n <= 0 {
				return nil, bad("want a positive number")
			}
			cfg.SnapCount = n
		case key == "autopurge.snapRetainCount":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return nil, bad("want a number")
			}
			cfg.AutopurgeSnapRetainCount = n
		case key == "autopurge.purgeInterval":
			h, err := strconv.Atoi(val)
			if err != nil || h < 0 {
				return nil, bad("want whole hours (0 disables)")
			}
			cfg.AutopurgeInterval = time.Duration(h) * time.Hour
		case key == "4lw.commands.whitelist":
			cfg.FourLetterWords = splitList(val)
		case key == "jute.maxbuffer":
			n, err := strconv.Atoi(val)
			if err != nil || n <= 0 {
				return nil, bad("want a positive number of bytes")
			}
			cfg.MaxRequestBytes = n
		case key == "initLimit", key == "syncLimit", key == "standaloneEnabled", key == "admin.enableServer",
			key == "admin.serverPort", key == "reconfigEnabled", key == "extendedTypesEnabled", key == "forceSync":
			// Ensemble, JVM or feature-flag settings with nothing to do here:
			// TTL nodes are always on, fsync is always on.
		default:
			warnings = append(warnings, fmt.Sprintf("zoo.cfg line %d: %s is not used by shepherd coord", lineNo, key))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("coord: read zoo.cfg: %w", err)
	}
	if !hasDataDir {
		// ZooKeeper refuses such a file ("dataDir is not set") rather than
		// keep its data in a default place nobody chose; so do we.
		return nil, fmt.Errorf("%w: zoo.cfg: dataDir is not set; add a line dataDir=/path/to/data (the directory for snapshots and the transaction log)", ErrConfig)
	}
	if port != "" || host != "" {
		h, p, _ := net.SplitHostPort(cfg.Listen)
		if host != "" {
			h = host
		}
		if port != "" {
			p = port
		}
		cfg.Listen = net.JoinHostPort(h, p)
	}
	return warnings, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		out = append(out, strings.TrimSpace(f))
	}
	return out
}
