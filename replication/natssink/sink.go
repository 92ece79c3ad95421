package natssink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shepherd-dev/shepherd/replication"
	"github.com/shepherd-dev/shepherd/replication/changeevent"
)

// New returns the sink publishing to the JetStream stream c describes.
// The configuration is checked when the sink is opened.
func New(c Config) replication.Sink { return sink{cfg: c} }

type sink struct{ cfg Config }

// String names the target without credentials.
func (s sink) String() string {
	return "nats " + redactURL(s.cfg.URL) + " stream " + s.cfg.Stream
}

// connect opens a connection and its JetStream context. The reconnect
// buffer is off: a publish while the connection is down fails at once
// instead of being sent after messages the outage may have lost.
func (s sink) connect(ctx context.Context, task string) (*nats.Conn, jetstream.JetStream, error) {
	opts := []nats.Option{
		nats.Name("shepherd replication " + task),
		nats.Timeout(connectTimeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectBufSize(-1),
	}
	switch {
	case s.cfg.User != "":
		opts = append(opts, nats.UserInfo(s.cfg.User, s.cfg.Password))
	case s.cfg.Password != "":
		opts = append(opts, nats.Token(s.cfg.Password))
	}
	nc, err := nats.Connect(s.cfg.URL, opts...)
	if err != nil {
		return nil, nil, connectError(s.cfg, err)
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(2*maxUnacked), jetstream.WithPublishAsyncTimeout(ackTimeout))
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// connectError classifies a failure to connect: refused credentials are
// not worth retrying, an unreachable server is.
func connectError(c Config, err error) error {
	err = fmt.Errorf("connect to NATS at %s: %w", redactURL(c.URL), err)
	if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) {
		return fmt.Errorf("%w: %w (check the task's target.user and target.password or target.passwordFile)", replication.ErrNonRetryable, err)
	}
	return err
}

// streamConfig is the stream Open creates when it is missing.
func (c Config) streamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        c.Stream,
		Description: "row changes published by shepherd",
		Subjects:    []string{c.SubjectPrefix + ".>"},
		Storage:     jetstream.FileStorage,
		Duplicates:  c.DuplicateWindow,
	}
}

// checkStream says why an existing stream cannot take the task's events:
// its subjects must cover <prefix>.> and it must remember message ids at
// least for the window.
func (c Config) checkStream(info *jetstream.StreamInfo) error {
	var problems []string
	want := c.SubjectPrefix + ".>"
	if !slices.ContainsFunc(info.Config.Subjects, func(s string) bool { return subjectCovers(s, want) }) {
		problems = append(problems, fmt.Sprintf("it takes subjects %q, which do not cover %s: add it to the stream, or set target.subjectPrefix to a prefix the stream takes",
			info.Config.Subjects, want))
	}
	if info.Config.Duplicates < c.DuplicateWindow {
		problems = append(problems, fmt.Sprintf("it keeps message ids for %v, less than target.duplicateWindow %v: re-sends after a takeover could be stored twice; raise the stream's duplicate window (nats stream edit %s --dupe-window %v) or lower target.duplicateWindow",
			info.Config.Duplicates, c.DuplicateWindow, c.Stream, c.DuplicateWindow))
	}
	if info.Config.NoAck {
		problems = append(problems, "it does not acknowledge messages (no_ack): the checkpoint cannot wait for them")
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: stream %s cannot take the task's events: %s", replication.ErrNonRetryable, c.Stream, strings.Join(problems, "; "))
}

// subjectCovers reports whether the stream subject filter s matches
// every subject that filter want matches.
func subjectCovers(s, want string) bool {
	st, wt := strings.Split(s, "."), strings.Split(want, ".")
	for i, tok := range st {
		switch {
		case tok == ">":
			return i < len(wt)
		case i >= len(wt):
			return false
		case tok == "*" && wt[i] != ">":
		case tok != wt[i]:
			return false
		}
	}
	return len(st) == len(wt)
}

// Open connects, creates the stream and the checkpoint bucket when they
// are missing and checks them when they exist.
func (s sink) Open(ctx context.Context, env replication.SinkEnv) (replication.OpenSink, error) {
	if env.Snapshot {
		return nil, fmt.Errorf("task %q: NATS target: %w", env.Task, replication.ErrSnapshotUnsupported)
	}
	cfg, err := s.cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s.cfg = cfg
	nc, js, err := s.connect(ctx, env.Task)
	if err != nil {
		return nil, err
	}
	t := &target{cfg: cfg, env: env, nc: nc, js: js}
	if err := t.prepare(ctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("task %q: %w", env.Task, err)
	}
	return t, nil
}

func (t *target) prepare(ctx context.Context) error {
	st, err := t.js.Stream(ctx, t.cfg.Stream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		if _, err := t.js.CreateStream(ctx, t.cfg.streamConfig()); err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("create stream %s: %w", t.cfg.Stream, jsError(err))
		}
		t.env.Log.Info("created JetStream stream", "stream", t.cfg.Stream, "subjects", t.cfg.SubjectPrefix+".>", "duplicate_window", t.cfg.DuplicateWindow)
		if st, err = t.js.Stream(ctx, t.cfg.Stream); err != nil {
			return fmt.Errorf("stream %s: %w", t.cfg.Stream, jsError(err))
		}
	case err != nil:
		return fmt.Errorf("stream %s: %w", t.cfg.Stream, jsError(err))
	}
	if err := t.cfg.checkStream(st.CachedInfo()); err != nil {
		return err
	}
	kv, err := t.js.KeyValue(ctx, t.cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = t.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: t.cfg.Bucket, Description: "shepherd replication checkpoints", History: 5, Storage: jetstream.FileStorage,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = t.js.KeyValue(ctx, t.cfg.Bucket)
		}
	}
	if err != nil {
		return fmt.Errorf("checkpoint bucket %s: %w", t.cfg.Bucket, jsError(err))
	}
	t.kv = kv
	return nil
}

// jsError marks JetStream's refusals for lack of permission or of
// JetStream itself as non-retryable; the rest (timeouts, a server
// restarting) may pass.
func jsError(err error) error {
	if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) || errors.Is(err, nats.ErrPermissionViolation) {
		return fmt.Errorf("%w: %w", replication.ErrNonRetryable, err)
	}
	return err
}

// DryRun connects and looks at the stream and the bucket, creating
// nothing.
func (s sink) DryRun(ctx context.Context, env replication.SinkEnv) []replication.Check {
	var checks []replication.Check
	add := func(name string, err error, ok string) {
		c := replication.Check{Name: name, OK: err == nil, Detail: ok}
		if err != nil {
			c.Detail = err.Error()
		}
		checks = append(checks, c)
	}
	if env.Snapshot {
		add("target snapshot", fmt.Errorf("NATS target: %w", replication.ErrSnapshotUnsupported), "")
		return checks
	}
	cfg, err := s.cfg.withDefaults()
	if err != nil {
		add("target configuration", err, "")
		return checks
	}
	s.cfg = cfg
	nc, js, err := s.connect(ctx, env.Task)
	add("target connect", err, "connected to NATS at "+redactURL(cfg.URL))
	if err != nil {
		return checks
	}
	defer nc.Close()
	_, err = js.AccountInfo(ctx)
	add("target JetStream", jsError(err), "JetStream is enabled for the account")
	if err != nil {
		return checks
	}
	st, err := js.Stream(ctx, cfg.Stream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		add("target stream", nil, fmt.Sprintf("stream %s does not exist: the task will create it (subjects %s.>, duplicate window %v)", cfg.Stream, cfg.SubjectPrefix, cfg.DuplicateWindow))
	case err != nil:
		add("target stream", err, "")
	default:
		add("target stream", cfg.checkStream(st.CachedInfo()), fmt.Sprintf("stream %s takes %s.> and keeps message ids for %v", cfg.Stream, cfg.SubjectPrefix, st.CachedInfo().Config.Duplicates))
	}
	_, err = js.KeyValue(ctx, cfg.Bucket)
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound):
		add("target checkpoint bucket", nil, fmt.Sprintf("key-value bucket %s does not exist: the task will create it", cfg.Bucket))
	default:
		add("target checkpoint bucket", err, fmt.Sprintf("key-value bucket %s, key %s", cfg.Bucket, env.Task))
	}
	return checks
}

// target is an open NATS sink.
type target struct {
	cfg Config
	env replication.SinkEnv
	nc  *nats.Conn
	js  jetstream.JetStream
	kv  jetstream.KeyValue
}

func (t *target) CheckpointPlace() string {
	return fmt.Sprintf("key %s of the JetStream key-value bucket %s", t.env.Task, t.cfg.Bucket)
}

func (t *target) Close() error {
	t.nc.Close()
	return nil
}

func (t *target) Checkpoint(ctx context.Context) (replication.Checkpoint, bool, error) {
	st, _, err := t.read(ctx)
	if err != nil {
		return replication.Checkpoint{}, false, err
	}
	cp := st.Checkpoint()
	return cp, !cp.Position.IsZero(), nil
}

func (t *target) ResetEpoch(ctx context.Context) (int64, error) {
	for {
		st, rev, err := t.read(ctx)
		if err != nil || rev == 0 {
			return 0, err
		}
		prev := st.Epoch
		st.Epoch = 0
		_, err = t.kv.Update(ctx, t.env.Task, st.Marshal(), rev)
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
			continue // written meanwhile: read again
		}
		if err != nil {
			return 0, fmt.Errorf("reset the epoch of task %q in %s: %w", t.env.Task, t.cfg.Bucket, err)
		}
		return prev, nil
	}
}

// Claim raises the stored epoch to epoch with a compare-and-set on the
// entry's revision, creating the entry (no position) if there is none.
func (t *target) Claim(ctx context.Context, epoch int64, owner string) (replication.SinkRun, replication.Checkpoint, error) {
	for {
		st, rev, err := t.read(ctx)
		if err != nil {
			return nil, replication.Checkpoint{}, err
		}
		if st.Epoch > epoch {
			return nil, replication.Checkpoint{}, t.fenced(epoch, st)
		}
		st.Version, st.Epoch, st.Owner, st.Time = storedVersion, epoch, owner, time.Now().UTC()
		if rev == 0 {
			rev, err = t.kv.Create(ctx, t.env.Task, st.Marshal())
		} else {
			rev, err = t.kv.Update(ctx, t.env.Task, st.Marshal(), rev)
		}
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
			continue // another owner wrote first: decide again on what it wrote
		}
		if err != nil {
			return nil, replication.Checkpoint{}, fmt.Errorf("claim task %q in %s: %w", t.env.Task, t.cfg.Bucket, err)
		}
		r := &run{t: t, epoch: epoch, owner: owner, rev: rev, base: st, reconnects: t.nc.Stats().Reconnects}
		return r, st.Checkpoint(), nil
	}
}

func (t *target) fenced(epoch int64, st stored) error {
	return fmt.Errorf("%w: task %q: epoch %d is older than the stored epoch %d of owner %q", replication.ErrFenced, t.env.Task, epoch, st.Epoch, st.Owner)
}

// read returns the task's entry and its revision, 0 when there is none.
func (t *target) read(ctx context.Context) (stored, uint64, error) {
	e, err := t.kv.Get(ctx, t.env.Task)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return stored{}, 0, nil
	}
	if err != nil {
		return stored{}, 0, fmt.Errorf("read the checkpoint of task %q from %s: %w", t.env.Task, t.cfg.Bucket, err)
	}
	var st stored
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		return stored{}, 0, fmt.Errorf("%w: the checkpoint of task %q in %s (revision %d) is not a checkpoint: %v", replication.ErrNonRetryable, t.env.Task, t.cfg.Bucket, e.Revision(), err)
	}
	return st, e.Revision(), nil
}

// duplicates counts the messages of this process that JetStream
// acknowledged as duplicates: re-sends it dropped.
var duplicates atomic.Int64

// Duplicates returns how many published messages JetStream dropped as
// re-sends of a message id it held, in this process.
func Duplicates() int64 { return duplicates.Load() }

const storedVersion = replication.StoredCheckpointVersion

// stored is a checkpoint as the sink keeps it.
type stored = replication.StoredCheckpoint

// run publishes one Run attempt's events and moves the checkpoint.
type run struct {
	t          *target
	epoch      int64
	owner      string
	rev        uint64 // the entry's revision this run wrote last
	base       stored // the entry as of rev
	reconnects uint64 // the connection's reconnects when the run began

	futures []jetstream.PubAckFuture // published in the open batch
	acked   int                      // futures[:acked] are acknowledged
	txn     replication.Position     // start of the source transaction being published
	index   int                      // next event index in it
	buf     []byte

	batch  replication.EventBatch
	closed bool
	replication.NoSnapshotCopy
}

func (r *run) Begin(start replication.Position, followed replication.History, committed func(pos replication.Position, followed string, ts uint32, rows, txns int)) {
	r.batch.Begin(followed, committed)
}

// Write publishes the segment's events, without waiting for their
// acknowledgements (Flush does).
func (r *run) Write(ctx context.Context, seg replication.Segment) error {
	if r.txn != seg.Start || !r.batch.Partial {
		r.txn, r.index = seg.Start, 0
	}
	src := changeevent.NewSource(r.t.env.Task, &seg)
	if seg.DDL != nil {
		if err := r.ddl(ctx, seg, &src); err != nil {
			return err
		}
	}
	for i := range seg.Changes {
		if err := r.change(ctx, &seg.Changes[i], &src); err != nil {
			return err
		}
	}
	r.batch.Took(&seg)
	return nil
}

func (r *run) ddl(ctx context.Context, seg replication.Segment, src *changeevent.Source) error {
	routed, ok, why, err := r.t.env.PlanDDL(seg.DDL.Schema, seg.DDL.Query)
	if err != nil {
		return fmt.Errorf("%w: DDL of source transaction %s at %s: %w", replication.ErrNonRetryable, seg.GTID, seg.Start, err)
	}
	if !ok {
		r.t.env.Log.Debug("DDL not published", "position", seg.Start.String(), "why", why)
		return nil
	}
	src.Row = r.index
	r.buf = changeevent.AppendDDLEvent(r.buf[:0], seg.DDL.Schema, seg.DDL.Query, routed, src)
	return r.publish(ctx, r.t.cfg.SubjectPrefix+"."+SchemaSubject, src)
}

func (r *run) change(ctx context.Context, c *replication.Change, src *changeevent.Source) error {
	db, table := r.t.env.Route(c.DB, c.Table)
	subject := r.t.cfg.SubjectPrefix + "." + SubjectToken(db) + "." + SubjectToken(table)
	src.DB, src.Table = c.DB, c.Table
	return changeevent.EachRow(c, func(op string, before, after []any) error {
		src.Row = r.index
		var err error
		if r.buf, err = changeevent.AppendRowEvent(r.buf[:0], c.TableMap, op, before, after, src); err != nil {
			return changeevent.RowError(c.DB, c.Table, src, err)
		}
		return r.publish(ctx, subject, src)
	})
}

// MsgID is the message id of event index of the source transaction
// starting at start with GTID gtid, published by task: the GTID where the
// transaction has one (it names the server that wrote the transaction
// first, so a re-send after a source failover to a replica has the same
// id), else the identity of the source server and the transaction's file
// position. The task's name keeps two tasks publishing one transaction
// into one stream from dropping each other's events.
func MsgID(task string, start replication.Position, gtid string, index int) string {
	if gtid != "" {
		return task + ":" + gtid + ":" + strconv.Itoa(index)
	}
	return task + ":" + start.Server + ":" + start.File + ":" + strconv.FormatUint(uint64(start.Pos), 10) + ":" + strconv.Itoa(index)
}

// publish sends r.buf with its message id, asynchronously.
func (r *run) publish(ctx context.Context, subject string, src *changeevent.Source) error {
	if len(r.futures)-r.acked >= maxUnacked {
		if err := r.waitAcks(ctx, r.acked+maxUnacked/2); err != nil {
			return err
		}
	}
	if err := r.checkConnection(); err != nil {
		return err
	}
	id := MsgID(src.Task, replication.Position{Server: src.Server, File: src.File, Pos: src.Pos}, src.GTID, r.index)
	m := &nats.Msg{Subject: subject, Data: append([]byte(nil), r.buf...), Header: nats.Header{}}
	f, err := r.t.js.PublishMsgAsync(m, jetstream.WithMsgID(id))
	if err != nil {
		return fmt.Errorf("publish %s to %s: %w", id, subject, err)
	}
	r.futures = append(r.futures, f)
	r.index++
	return nil
}

// checkConnection fails the run once the connection has been
// re-established since it began: messages of the open batch may have
// been lost with the old one, and publishing more now would store them
// after their successors. The retry re-publishes from the checkpoint, in
// order; what was stored is dropped as a duplicate.
func (r *run) checkConnection() error {
	if n := r.t.nc.Stats().Reconnects; n != r.reconnects {
		return fmt.Errorf("the connection to NATS was lost and re-established: publishing again from the checkpoint")
	}
	return nil
}

// waitAcks waits until futures[:n] are acknowledged; a message refused
// or unacknowledged within ackTimeout fails the batch.
func (r *run) waitAcks(ctx context.Context, n int) error {
	for ; r.acked < n; r.acked++ {
		f := r.futures[r.acked]
		select {
		case ack := <-f.Ok():
			if ack.Duplicate {
				duplicates.Add(1)
			}
		case err := <-f.Err():
			return fmt.Errorf("JetStream did not store %s on %s: %w", f.Msg().Header.Get(jetstream.MsgIDHeader), f.Msg().Subject, err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Flush commits when the batch is full or the stream has nothing more
// ready: it waits for the acknowledgement of every message of the batch,
// then moves the checkpoint with a compare-and-set on the revision this
// run last wrote. A newer owner's claim has changed the revision, so a
// fenced run cannot move it.
func (r *run) Flush(ctx context.Context, more bool) error {
	if !r.batch.Due(r.t.env.BatchRows, more) {
		return nil
	}
	if err := r.waitAcks(ctx, len(r.futures)); err != nil {
		return err
	}
	if err := r.checkConnection(); err != nil {
		return err
	}
	st, end := r.batch.Stored(r.base, r.epoch, r.owner), r.batch.End
	rev, err := r.t.kv.Update(ctx, r.t.env.Task, st.Marshal(), r.rev)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		now, _, rerr := r.t.read(ctx)
		if rerr == nil && now.Epoch > r.epoch {
			return r.t.fenced(r.epoch, now)
		}
		return fmt.Errorf("the checkpoint of task %q moved since this run last wrote it (revision %d): resuming from it", r.t.env.Task, r.rev)
	}
	if err != nil {
		return fmt.Errorf("write the checkpoint %s of task %q to %s: %w", end, r.t.env.Task, r.t.cfg.Bucket, err)
	}
	r.rev, r.base = rev, st
	clear(r.futures)
	r.futures, r.acked = r.futures[:0], 0
	r.batch.Committed()
	return nil
}

// InFlight is nil: Flush waits for its acknowledgements itself.
func (r *run) InFlight() <-chan error { return nil }

func (r *run) Landed(ctx context.Context, err error) error { return err }

func (r *run) Idle() bool { return r.batch.Idle() }

// Close forgets the open batch: its messages may be stored, and the next
// run re-publishes them with the same ids.
func (r *run) Close() {
	if r.closed {
		return
	}
	r.closed = true
	clear(r.futures)
	r.futures = nil
}
