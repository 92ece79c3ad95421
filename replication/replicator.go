package replication

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/shepherd-dev/shepherd/internal/mysqldial"
)

// Replicator copies one task's changes from its source to its target. Its
// methods may be called concurrently, except that only one Run may be
// active at a time.
type Replicator struct {
	cfg    Config
	log    *slog.Logger
	filter *filter
	flavor string // the source's

	source *sql.DB  // metadata queries: variables, binlog status
	sink   OpenSink // where rows go, and the checkpoint
	env    SinkEnv

	// rowDec decodes rows events for every syncer of this replicator
	// and counts what it decoded.
	rowDec *rowDecoder

	running atomic.Bool
	closeMu sync.Mutex
	closed  bool
}

// Open checks the configuration, the source (binary log on, ROW format,
// full row images — else an error wrapping ErrSourceConfig naming the
// variable and the fix) and the target (reachable; the checkpoint schema,
// table and the task's row are created if missing). Denied access wraps
// ErrNonRetryable; an unreachable server is a plain error the caller may
// retry.
func Open(ctx context.Context, cfg Config) (*Replicator, error) {
	r, err := open(ctx, cfg)
	if err != nil {
		return nil, classify(err)
	}
	return r, nil
}

func open(ctx context.Context, cfg Config) (*Replicator, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	f, err := newFilter(cfg.Include, cfg.Exclude, cfg.Routes)
	if err != nil {
		return nil, err
	}
	r := &Replicator{
		cfg:    cfg,
		log:    cfg.Logger.With("task", cfg.Task),
		filter: f,
		rowDec: newRowDecoder(syncerLocation),
	}
	r.env = SinkEnv{Task: cfg.Task, Log: r.log, BatchRows: cfg.BatchRows, Snapshot: cfg.Snapshot.Enabled, filter: f, rawLog: cfg.Logger}
	if r.source, err = openDB(cfg.Source, 2, false, cfg.Logger); err != nil {
		return nil, err
	}
	info, err := checkSource(ctx, r.source, cfg.Source, cfg.ServerID)
	if err != nil {
		r.source.Close()
		return nil, fmt.Errorf("task %q: %w", cfg.Task, err)
	}
	r.flavor = info.flavor
	if r.sink, err = cfg.sink().Open(ctx, r.env); err != nil {
		r.source.Close()
		return nil, err
	}
	r.log.Info("replicator opened", "source", cfg.Source.String(), "source_version", info.version,
		"flavor", info.flavor, "target", cfg.sink().String(), "server_id", cfg.ServerID)
	return r, nil
}

// Flavor is the source's flavor, "mysql" or "mariadb".
func (r *Replicator) Flavor() string { return r.flavor }

// ResolveStart turns a start spec into a position on the source:
// "current" (the end of its binary log now), "earliest" (the start of the
// oldest binlog file it keeps), "file:pos" (e.g. "mysql-bin.000003:4"), or
// a GTID set in the source's flavor ("0-1-100" on MariaDB). On MariaDB the
// GTID state of file positions is filled in, and their server
// (Position.Server). Errors are classified as
// Open's and Run's are: a missing privilege (the account needs BINLOG
// MONITOR, or REPLICATION CLIENT on MySQL, for "current" and "earliest")
// wraps ErrNonRetryable and names the grant.
func (r *Replicator) ResolveStart(ctx context.Context, spec string) (Position, error) {
	p, err := resolveStart(ctx, r.source, r.cfg.Source, r.flavor, spec)
	if err != nil {
		return Position{}, fmt.Errorf("task %q: %w", r.cfg.Task, classify(err))
	}
	if p.File != "" { // a file position is of the server that answered
		id, err := sourceIdentity(ctx, r.source, r.cfg.Source, r.flavor)
		if err != nil {
			return Position{}, fmt.Errorf("task %q: %w", r.cfg.Task, classify(err))
		}
		p.Server = id.Name
	}
	return p, nil
}

// Locate completes p, a position an operator gives a task (core's
// reset-position), on the server now behind the source address, and
// checks that this server can serve it, so that a position Run would
// refuse, or place wrongly, is refused before it is stored:
//
//   - a file position of no server is taken to be of this one, as placeOn
//     takes it, and Server is set to this server's identity;
//   - a file position of this server gets, on MariaDB, its GTID state
//     (BINLOG_GTID_POS), which also checks that the server has the file
//     and offset; MySQL cannot tell the GTID state at an offset;
//   - a file position of another server is refused (ErrNotOnSource): an
//     offset means nothing here, even in a file of the same name — unless
//     it carries a GTID state, by which placeOn resumes it;
//   - a GTID state without this server's file position (a GTID set alone,
//     or another server's position) must be of the source's flavor and
//     contained in its GTID state (@@gtid_binlog_pos, MySQL
//     @@gtid_executed), else ErrNotOnSource: the source has not written
//     those transactions. A GTID set alone keeps Server empty: it is of no
//     one server, and placeOn resumes it on whichever is there.
func (r *Replicator) Locate(ctx context.Context, p Position) (Position, error) {
	p, err := r.locate(ctx, p)
	if err != nil {
		return Position{}, fmt.Errorf("task %q: %w", r.cfg.Task, classify(err))
	}
	return p, nil
}

func (r *Replicator) locate(ctx context.Context, p Position) (Position, error) {
	if p.IsZero() {
		return Position{}, fmt.Errorf("%w: no position given", ErrConfig)
	}
	id, err := sourceIdentity(ctx, r.source, r.cfg.Source, r.flavor)
	if err != nil {
		return Position{}, err
	}
	if p.File != "" && (p.Server == "" || p.Server == id.Name) {
		p.Server = id.Name
		if r.flavor == FlavorMariaDB {
			if p.GTID, err = binlogGTIDPos(ctx, r.source, p.File, p.Pos); err != nil {
				return Position{}, err
			}
		}
		return p, nil
	}
	if p.GTID == "" {
		return Position{}, fmt.Errorf("%w: %s is a position in the binlog of server %s, but the source %s is server %s: a file offset means nothing on another server; "+
			"give a position of %s, or the GTID set to resume from (reset-position --to <GTID set>)",
			ErrNotOnSource, p, p.Server, r.cfg.Source, id.Name, id.Name)
	}
	g, flavor, err := ParseGTIDSet(p.GTID)
	if err != nil {
		return Position{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if flavor != r.flavor {
		return Position{}, fmt.Errorf("%w: %q is a %s GTID set, but the source %s runs %s", ErrConfig, p.GTID, flavor, r.cfg.Source, r.flavor)
	}
	p.GTID = g
	c, err := readCandidate(ctx, r.source, r.cfg.Source, r.flavor, id)
	if err != nil {
		return Position{}, err
	}
	have := c.pos
	if c, ok := ComparePositions(r.flavor, Position{GTID: have}, Position{GTID: g}); !ok || c < 0 {
		return Position{}, fmt.Errorf("%w: the source %s (server %s) has GTID state %q, which does not contain %q: it has not written those transactions",
			ErrNotOnSource, r.cfg.Source, id.Name, have, g)
	}
	return p, nil
}

// TargetCheckpoint returns what the target's checkpoint row says. ok is
// false when no transaction has been committed for the task yet.
func (r *Replicator) TargetCheckpoint(ctx context.Context) (Checkpoint, bool, error) {
	cp, ok, err := r.sink.Checkpoint(ctx)
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("task %q: %w", r.cfg.Task, classify(err))
	}
	return cp, ok, nil
}

// ResetEpoch sets the epoch of the task's checkpoint in the target back
// to 0, keeping its position, and returns the epoch it held (0 with no
// checkpoint). Owners' epochs are zxids of one coordination ensemble;
// after a move to another ensemble, or a coordination server started on
// an empty data directory, new owners have smaller epochs than the
// checkpoint and are fenced for good. The reset lets any epoch claim the
// task again — an owner still running under the old ensemble included, so
// stop every instance of the task first.
func (r *Replicator) ResetEpoch(ctx context.Context) (int64, error) {
	prev, err := r.sink.ResetEpoch(ctx)
	if err != nil {
		return 0, fmt.Errorf("task %q: %w", r.cfg.Task, classify(err))
	}
	return prev, nil
}

// Close releases the connections. Cancel a Run's context first: a Run
// that finds the connections closed returns ErrClosed.
func (r *Replicator) Close() error {
	r.closeMu.Lock()
	defer r.closeMu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	var errs []error
	if r.source != nil {
		errs = append(errs, r.source.Close())
	}
	if r.sink != nil {
		errs = append(errs, r.sink.Close())
	}
	return errors.Join(errs...)
}

func (r *Replicator) isClosed() bool {
	r.closeMu.Lock()
	defer r.closeMu.Unlock()
	return r.closed
}

// syncer is go-mysql's binlog reader with the dialer that guards the
// calls that connect to the source (mysqldial.Dialer.Guard).
type syncer struct {
	*replication.BinlogSyncer
	dial *mysqldial.Dialer
}

// newSyncer configures go-mysql's binlog reader. Its own reconnect loop is
// off: Run reconnects from the target's checkpoint, which is the only
// position it can trust after a failure (and a reconnect in the syncer's
// goroutine would parse a handshake outside the guard).
func (r *Replicator) newSyncer() syncer {
	dial := mysqldial.NewDialer(r.cfg.Source.Addr(), r.log)
	return syncer{dial: dial, BinlogSyncer: replication.NewBinlogSyncer(r.syncerConfig(dial))}
}

// syncerConfig is the configuration of the syncer reading through dial.
func (r *Replicator) syncerConfig(dial *mysqldial.Dialer) replication.BinlogSyncerConfig {
	hb := r.cfg.HeartbeatPeriod
	return replication.BinlogSyncerConfig{
		ServerID:                r.cfg.ServerID,
		Flavor:                  r.flavor,
		Host:                    r.cfg.Source.Host,
		Port:                    uint16(r.cfg.Source.Port),
		User:                    r.cfg.Source.User,
		Password:                r.cfg.Source.Password,
		HeartbeatPeriod:         hb,
		ReadTimeout:             3*hb + 2*time.Second,
		DisableRetrySync:        true,
		VerifyChecksum:          true,
		TimestampStringLocation: syncerLocation,
		RenderJSONAsMySQLText:   true,
		EventCacheCount:         4096,
		Logger:                  slog.New(quietHandler{r.log.Handler()}),
		Dialer:                  dial.Dial,
		RowsEventDecodeFunc:     r.rowsDecodeFunc(),
	}
}

// syncerLocation is the syncer's TimestampStringLocation: TIMESTAMP
// values are text in UTC, as every target session is.
var syncerLocation = time.UTC

// rowsDecodeFunc is the syncer's RowsEventDecodeFunc: the fast path for
// common column types (rowdecode.go), or nil for go-mysql's own decoding
// when Config.goMySQLRows asks for it.
func (r *Replicator) rowsDecodeFunc() func(*replication.RowsEvent, []byte) error {
	if r.cfg.goMySQLRows || r.rowDec == nil {
		return nil
	}
	return r.rowDec.decode
}

// Close stops the syncer. It connects to the source to end the dump
// thread (KILL), so it runs under the guard too.
func (s syncer) Close() {
	_ = s.dial.Guard(func() error {
		s.BinlogSyncer.Close()
		return nil
	})
}

// startStream starts reading at p: by file and offset when known (exact on
// this server), else by GTID state.
func (r *Replicator) startStream(s syncer, p Position) (stream *replication.BinlogStreamer, err error) {
	var g gomysql.GTIDSet
	if p.File == "" {
		if g, err = gomysql.ParseGTIDSet(r.flavor, p.GTID); err != nil {
			return nil, nonRetryable(fmt.Errorf("GTID state %q: %w", p.GTID, err))
		}
	}
	err = s.dial.Guard(func() (err error) {
		if p.File != "" {
			stream, err = s.StartSync(gomysql.Position{Name: p.File, Pos: p.Pos})
		} else {
			stream, err = s.StartSyncGTID(g)
		}
		return err
	})
	return stream, err
}

// quietHandler passes go-mysql's logs on one level down: it reports every
// connect and close at Info, which is noise at the replicator's level.
type quietHandler struct{ slog.Handler }

func (h quietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, l-4)
}

func (h quietHandler) Handle(ctx context.Context, rec slog.Record) error {
	rec.Level -= 4
	rec.AddAttrs(slog.String("component", "go-mysql"))
	return h.Handler.Handle(ctx, rec)
}

func (h quietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return quietHandler{h.Handler.WithAttrs(as)}
}

func (h quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{h.Handler.WithGroup(name)}
}
