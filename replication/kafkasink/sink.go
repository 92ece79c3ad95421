package kafkasink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shepherd-dev/shepherd/replication"
	"github.com/shepherd-dev/shepherd/replication/changeevent"
)

// New returns the sink producing to the Kafka cluster c describes. The
// configuration is checked when the sink is opened.
func New(c Config) replication.Sink { return sink{cfg: c} }

type sink struct{ cfg Config }

// String names the target without credentials.
func (s sink) String() string { return s.cfg.String() }

// TransactionalID is the transactional.id of task's producer: one per
// task, so that a new owner's producer fences the old one's.
func TransactionalID(task string) string { return "shepherd." + task }

// Bounds on waiting for the cluster: past them a request or a record
// fails, and with it the batch, and the run retries from the checkpoint
// (variables for the tests).
var (
	retryTimeout    = 30 * time.Second
	deliveryTimeout = time.Minute
)

// checkpointPartition is the partition of the checkpoint topic every
// checkpoint is written to and read from: reading one partition to its
// end finds a task's latest, whatever the topic's partition count.
const checkpointPartition = 0

// client opens a client of the cluster, with opts added.
func (c Config) client(task string, opts ...kgo.Opt) (*kgo.Client, error) {
	base, err := c.clientOpts()
	if err != nil {
		return nil, err
	}
	base = append(base, kgo.ClientID("shepherd"), kgo.RetryTimeout(retryTimeout), kgo.RecordDeliveryTimeout(deliveryTimeout))
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("%w: kafka client of task %q: %w", replication.ErrNonRetryable, task, err)
	}
	return cl, nil
}

// kafkaError marks the broker's refusals that retrying cannot change —
// authentication, authorization — as non-retryable.
func kafkaError(what string, err error) error {
	err = fmt.Errorf("%s: %w", what, err)
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke {
		case kerr.SaslAuthenticationFailed, kerr.TopicAuthorizationFailed, kerr.TransactionalIDAuthorizationFailed,
			kerr.ClusterAuthorizationFailed, kerr.UnsupportedSaslMechanism, kerr.InvalidTopicException,
			kerr.InvalidTransactionTimeout, kerr.PolicyViolation:
			return fmt.Errorf("%w: %w (check the task's target: brokers, saslMechanism, user, password, ACLs)", replication.ErrNonRetryable, err)
		}
	}
	return err
}

// Open connects and creates the checkpoint topic when it is missing.
func (s sink) Open(ctx context.Context, env replication.SinkEnv) (replication.OpenSink, error) {
	if env.Snapshot {
		return nil, fmt.Errorf("task %q: Kafka target: %w", env.Task, replication.ErrSnapshotUnsupported)
	}
	cfg, err := s.cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	cl, err := cfg.client(env.Task)
	if err != nil {
		return nil, err
	}
	t := &target{cfg: cfg, env: env, cl: cl, adm: kadm.NewClient(cl), topics: map[string]bool{}}
	if err := t.ensureTopic(ctx, cfg.CheckpointTopic, true); err != nil {
		cl.Close()
		return nil, fmt.Errorf("task %q: %w", env.Task, err)
	}
	return t, nil
}

// DryRun connects and looks at the checkpoint topic, creating nothing.
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
		add("target snapshot", fmt.Errorf("a Kafka target: %w", replication.ErrSnapshotUnsupported), "")
		return checks
	}
	cfg, err := s.cfg.withDefaults()
	if err != nil {
		add("target configuration", err, "")
		return checks
	}
	cl, err := cfg.client(env.Task)
	if err != nil {
		add("target connect", err, "")
		return checks
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		add("target connect", kafkaError("connect to Kafka at "+fmt.Sprint(cfg.Brokers), err), "")
		return checks
	}
	add("target connect", nil, fmt.Sprintf("connected to Kafka cluster %s (%d brokers)", md.Cluster, len(md.Brokers)))
	td, err := adm.ListTopics(ctx, cfg.CheckpointTopic)
	switch {
	case err != nil:
		add("target checkpoint topic", kafkaError("topic "+cfg.CheckpointTopic, err), "")
	case !td.Has(cfg.CheckpointTopic):
		add("target checkpoint topic", nil, fmt.Sprintf("topic %s does not exist: the task will create it (compacted, one partition)", cfg.CheckpointTopic))
	default:
		add("target checkpoint topic", td[cfg.CheckpointTopic].Err, fmt.Sprintf("topic %s, key %s, partition %d", cfg.CheckpointTopic, env.Task, checkpointPartition))
	}
	return checks
}

// target is an open Kafka sink.
type target struct {
	cfg Config
	env replication.SinkEnv
	cl  *kgo.Client // not transactional: metadata, topics, checkpoint reads
	adm *kadm.Client

	topics map[string]bool // topics known to exist; used by the run's goroutine only

	mu   sync.Mutex // guards the checkpoint read below
	next int64      // offset of the checkpoint partition read up to
	last stored     // the task's latest checkpoint below next
}

func (t *target) CheckpointPlace() string {
	return fmt.Sprintf("key %s of partition %d of the Kafka topic %s", t.env.Task, checkpointPartition, t.cfg.CheckpointTopic)
}

func (t *target) Close() error {
	t.cl.Close()
	return nil
}

// ensureTopic creates topic if it does not exist yet: compacted with one
// partition for the checkpoints, with the configured partitions and
// replication factor for events.
func (t *target) ensureTopic(ctx context.Context, topic string, checkpoints bool) error {
	if t.topics[topic] {
		return nil
	}
	parts, rf := t.cfg.Partitions, t.cfg.ReplicationFactor
	var configs map[string]*string
	if checkpoints {
		parts, configs = 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
	}
	if parts == 0 {
		parts = -1
	}
	if rf == 0 {
		rf = -1
	}
	resp, err := t.adm.CreateTopic(ctx, parts, rf, configs, topic)
	if err == nil {
		err = resp.Err
	}
	switch {
	case errors.Is(err, kerr.TopicAlreadyExists):
	case err != nil:
		return kafkaError("create topic "+topic, err)
	default:
		t.env.Log.Info("created Kafka topic", "topic", topic, "partitions", resp.NumPartitions)
	}
	t.topics[topic] = true
	return nil
}

const storedVersion = replication.StoredCheckpointVersion

// stored is a checkpoint as the sink keeps it.
type stored = replication.StoredCheckpoint

func (t *target) record(st stored) *kgo.Record {
	return &kgo.Record{Topic: t.cfg.CheckpointTopic, Partition: checkpointPartition, Key: []byte(t.env.Task), Value: st.Marshal()}
}

func (t *target) Checkpoint(ctx context.Context) (replication.Checkpoint, bool, error) {
	st, err := t.read(ctx, -1)
	if err != nil {
		return replication.Checkpoint{}, false, err
	}
	cp := st.Checkpoint()
	return cp, !cp.Position.IsZero(), nil
}

// ResetEpoch writes the checkpoint again with epoch 0, in a transaction
// of the task's producer: it fences the running owner's, which then
// claims the task again.
func (t *target) ResetEpoch(ctx context.Context) (int64, error) {
	p, err := t.producer()
	if err != nil {
		return 0, err
	}
	defer p.Close()
	for {
		st, err := t.read(ctx, -1)
		if err != nil || st.Version == 0 {
			return 0, err
		}
		prev := st.Epoch
		st.Epoch = 0
		st.Time = time.Now().UTC()
		now, err := t.transact(ctx, p, st)
		if err != nil {
			return 0, err
		}
		if now.SamePlace(st) && now.Epoch == prev {
			if err := t.commit(ctx, p); err != nil {
				return 0, err
			}
			return prev, nil
		}
		abort(p) // moved meanwhile: read again
	}
}

// producer is a new transactional producer of the task. Records go to
// the partition of their key (Kafka's own hashing, so that a key's
// events stay in order and other producers agree), checkpoints to
// checkpointPartition.
func (t *target) producer() (*kgo.Client, error) {
	return t.cfg.client(t.env.Task,
		kgo.TransactionalID(TransactionalID(t.env.Task)),
		kgo.TransactionTimeout(t.cfg.TransactionTimeout),
		kgo.RecordPartitioner(partitioner{checkpoints: t.cfg.CheckpointTopic, keyed: kgo.StickyKeyPartitioner(nil)}),
		kgo.MaxBufferedRecords(maxBuffered),
		kgo.ProducerLinger(0),
	)
}

// partitioner sends the checkpoint records to the partition they name
// and the others by key.
type partitioner struct {
	checkpoints string
	keyed       kgo.Partitioner
}

func (p partitioner) ForTopic(topic string) kgo.TopicPartitioner {
	if topic == p.checkpoints {
		return kgo.ManualPartitioner().ForTopic(topic)
	}
	return p.keyed.ForTopic(topic)
}

// transact begins a transaction of p holding st and returns the task's
// checkpoint as committed before it. The record is produced first: its
// producer's first request fences every older producer of the task and
// settles their open transactions, so what the read finds below the
// record's offset can no longer change.
func (t *target) transact(ctx context.Context, p *kgo.Client, st stored) (stored, error) {
	if err := p.BeginTransaction(); err != nil {
		return stored{}, fmt.Errorf("begin a Kafka transaction: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, deliveryTimeout)
	defer cancel()
	r, err := p.ProduceSync(pctx, t.record(st)).First()
	if err != nil {
		abort(p)
		return stored{}, t.fencedOr(ctx, st.Epoch, kafkaError("write the checkpoint of task "+strconv.Quote(t.env.Task)+" to "+t.cfg.CheckpointTopic, err))
	}
	now, err := t.read(ctx, r.Offset)
	if err != nil {
		abort(p)
		return stored{}, err
	}
	return now, nil
}

// commit commits p's transaction.
func (t *target) commit(ctx context.Context, p *kgo.Client) error {
	if err := flush(ctx, p); err != nil {
		return err
	}
	if err := endTransaction(ctx, p); err != nil {
		return fmt.Errorf("commit the Kafka transaction: %w", err)
	}
	return nil
}

// endTransaction commits p's transaction, waiting at most
// deliveryTimeout: a producer that cannot tell is abandoned, and what it
// left open the next one aborts.
func endTransaction(ctx context.Context, p *kgo.Client) error {
	ctx, cancel := context.WithTimeout(ctx, deliveryTimeout)
	defer cancel()
	return p.EndTransaction(ctx, kgo.TryCommit)
}

// abort ends p's transaction without committing, as well as it can: a
// producer that fails here is closed, and the next one's first request
// aborts what it left open.
func abort(p *kgo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.AbortBufferedRecords(ctx); err != nil {
		return
	}
	p.EndTransaction(ctx, kgo.TryAbort)
}

// Claim raises the stored epoch to epoch in a transaction of a new
// producer of the task, whose first request fences the producers of
// every earlier claim.
func (t *target) Claim(ctx context.Context, epoch int64, owner string) (replication.SinkRun, replication.Checkpoint, error) {
	st, err := t.read(ctx, -1)
	if err != nil {
		return nil, replication.Checkpoint{}, err
	}
	if st.Epoch > epoch {
		return nil, replication.Checkpoint{}, t.fenced(epoch, st)
	}
	p, err := t.producer()
	if err != nil {
		return nil, replication.Checkpoint{}, err
	}
	for {
		claim := st
		claim.Version, claim.Epoch, claim.Owner, claim.Time = storedVersion, epoch, owner, time.Now().UTC()
		now, err := t.transact(ctx, p, claim)
		if err != nil {
			p.Close()
			return nil, replication.Checkpoint{}, err
		}
		if now.Epoch > epoch {
			abort(p)
			p.Close()
			return nil, replication.Checkpoint{}, t.fenced(epoch, now)
		}
		if !now.SamePlace(st) || now.Epoch != st.Epoch {
			// Moved after the first read, by the owner this claim
			// fenced: claim again on what it committed.
			abort(p)
			st = now
			continue
		}
		if err := t.commit(ctx, p); err != nil {
			abort(p)
			p.Close()
			return nil, replication.Checkpoint{}, t.fencedOr(ctx, epoch, fmt.Errorf("claim task %q in %s: %w", t.env.Task, t.cfg.CheckpointTopic, err))
		}
		r := &run{t: t, p: p, epoch: epoch, owner: owner, base: claim}
		return r, claim.Checkpoint(), nil
	}
}

func (t *target) fenced(epoch int64, st stored) error {
	return fmt.Errorf("%w: task %q: epoch %d is older than the stored epoch %d of owner %q", replication.ErrFenced, t.env.Task, epoch, st.Epoch, st.Owner)
}

// fencedOr returns ErrFenced when err is a fenced producer's and a newer
// epoch than epoch is stored, else err: a producer fenced by an older
// owner's claim (which that owner then abandons) is retried.
func (t *target) fencedOr(ctx context.Context, epoch int64, err error) error {
	if !isFencedProducer(err) {
		return err
	}
	if st, rerr := t.read(ctx, -1); rerr == nil && st.Epoch > epoch {
		return fmt.Errorf("%w (%w)", t.fenced(epoch, st), err)
	}
	return fmt.Errorf("another producer of task %q took over its transactional id %s: claiming the task again: %w", t.env.Task, TransactionalID(t.env.Task), err)
}

func isFencedProducer(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.InvalidProducerIDMapping) || errors.Is(err, kerr.TransactionalIDNotFound)
}

// read returns the task's latest checkpoint committed below offset until
// of the checkpoint partition (below its last stable offset when until
// is negative), reading from where the last read stopped. It fetches in
// read_committed isolation: a checkpoint of an aborted or open
// transaction is never seen.
func (t *target) read(ctx context.Context, until int64) (stored, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	topic := t.cfg.CheckpointTopic
	fail := func(err error) (stored, error) {
		return stored{}, kafkaError("read the checkpoint of task "+strconv.Quote(t.env.Task)+" from "+topic, err)
	}
	if until < 0 {
		offs, err := t.adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return fail(err)
		}
		o, ok := offs.Lookup(topic, checkpointPartition)
		if !ok {
			return fail(fmt.Errorf("no partition %d", checkpointPartition))
		}
		if o.Err != nil {
			return fail(o.Err)
		}
		until = o.Offset
	}
	for t.next < until {
		md, err := t.adm.Metadata(ctx, topic)
		if err != nil {
			return fail(err)
		}
		td := md.Topics[topic]
		if td.Err != nil {
			return fail(td.Err)
		}
		pd, ok := td.Partitions[checkpointPartition]
		if !ok || pd.Leader < 0 {
			return fail(fmt.Errorf("partition %d has no leader", checkpointPartition))
		}
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.IsolationLevel, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 1, 500, 1, 8<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, td.ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = checkpointPartition, t.next, 8<<20, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, t.cl.Broker(int(pd.Leader)))
		if err != nil {
			return fail(err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fail(err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return fail(errors.New("the fetch response does not have the partition"))
		}
		fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
			Offset: t.next, IsolationLevel: kgo.ReadCommitted(), Topic: topic, Partition: checkpointPartition,
		}, &resp.Topics[0].Partitions[0], kgo.DefaultDecompressor(), nil)
		if errors.Is(fp.Err, kerr.OffsetOutOfRange) && t.next < fp.LogStartOffset {
			t.next = fp.LogStartOffset // removed by retention: nothing of it is needed
			continue
		}
		if fp.Err != nil {
			return fail(fp.Err)
		}
		for _, r := range fp.Records {
			if string(r.Key) != t.env.Task || r.Offset >= until {
				continue
			}
			var st stored
			if err := json.Unmarshal(r.Value, &st); err != nil {
				return stored{}, fmt.Errorf("%w: the checkpoint of task %q in %s (offset %d) is not a checkpoint: %v", replication.ErrNonRetryable, t.env.Task, topic, r.Offset, err)
			}
			t.last = st
		}
		t.next = max(t.next, min(next, until))
	}
	return t.last, nil
}

// run produces one Run attempt's events in Kafka transactions, each
// committing a batch of whole source transactions with the checkpoint
// that covers them.
type run struct {
	t     *target
	p     *kgo.Client // the task's transactional producer
	epoch int64
	owner string
	base  stored // the checkpoint this run committed last

	mu      sync.Mutex
	failure error // the first record the broker refused

	inTxn bool                 // a Kafka transaction is open
	txn   replication.Position // start of the source transaction being produced
	index int                  // next event index in it
	buf   []byte
	key   []byte

	batch  replication.EventBatch
	closed bool
	replication.NoSnapshotCopy
}

func (r *run) Begin(start replication.Position, followed replication.History, committed func(pos replication.Position, followed string, ts uint32, rows, txns int)) {
	r.batch.Begin(followed, committed)
}

// failed returns the first refusal of a record of the open transaction.
func (r *run) failed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failure
}

func (r *run) promise(rec *kgo.Record, err error) {
	if err == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failure == nil {
		r.failure = kafkaError(fmt.Sprintf("Kafka did not store an event on topic %s", rec.Topic), err)
	}
}

// Write produces the segment's events in the open Kafka transaction
// (beginning one if none is open), without waiting for them (Flush
// does).
func (r *run) Write(ctx context.Context, seg replication.Segment) error {
	if err := r.failed(); err != nil {
		return err
	}
	if !r.inTxn {
		if err := r.p.BeginTransaction(); err != nil {
			return fmt.Errorf("begin a Kafka transaction: %w", err)
		}
		r.inTxn = true
	}
	if r.txn != seg.Start || !r.batch.Partial {
		r.txn, r.index = seg.Start, 0
	}
	src := changeevent.NewSource(r.t.env.Task, &seg)
	if seg.DDL != nil {
		if err := r.ddl(ctx, seg, &src); err != nil {
			return err
		}
	}
	left := 0 // row events of the segment still to produce
	for i := range seg.Changes {
		n := len(seg.Changes[i].Rows)
		if seg.Changes[i].Kind == replication.ChangeUpdate {
			n /= 2
		}
		left += n
	}
	for i := range seg.Changes {
		if err := r.change(ctx, &seg.Changes[i], &src, seg.Last, &left); err != nil {
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
		r.t.env.Log.Debug("DDL not produced", "position", seg.Start.String(), "why", why)
		return nil
	}
	src.DB, src.Table, src.Row = "", "", r.index
	switch r.t.cfg.Format {
	case FormatCanal:
		r.buf = appendCanalDDL(r.buf[:0], seg.DDL.Schema, seg.DDL.Query, src)
	case FormatMaxwell:
		r.buf = appendMaxwellDDL(r.buf[:0], seg.DDL.Schema, seg.DDL.Query, src)
	default:
		r.buf = changeevent.AppendDDLEvent(r.buf[:0], seg.DDL.Schema, seg.DDL.Query, routed, src)
	}
	// One key for all of the task's schema changes: one partition, in
	// the order the source ran them.
	return r.produce(ctx, r.t.cfg.SchemaTopic, []byte(r.t.env.Task), src)
}

// topic is where the rows of source table db.table go.
func (r *run) topic(db, table string) (string, error) {
	if r.t.cfg.TopicMode == TopicSingle {
		return r.t.cfg.Topic, nil
	}
	db, table = r.t.env.Route(db, table)
	topic := r.t.cfg.TopicPrefix + "." + TopicName(db) + "." + TopicName(table)
	if len(topic) > maxTopicLength {
		return "", fmt.Errorf("%w: the topic of table %s.%s, %s, is longer than Kafka's %d characters: route the table to a shorter name, shorten target.topicPrefix, or use target.topicMode %s",
			replication.ErrNonRetryable, db, table, topic, maxTopicLength, TopicSingle)
	}
	return topic, nil
}

func (r *run) change(ctx context.Context, c *replication.Change, src *changeevent.Source, lastSeg bool, left *int) error {
	topic, err := r.topic(c.DB, c.Table)
	if err != nil {
		return err
	}
	src.DB, src.Table = c.DB, c.Table
	cols, err := changeevent.Columns(c.TableMap)
	if err != nil {
		return changeevent.RowError(c.DB, c.Table, src, err)
	}
	t := table{db: c.DB, name: c.Table, cols: cols}
	for _, i := range c.TableMap.PrimaryKey {
		if int(i) >= len(cols) {
			return changeevent.RowError(c.DB, c.Table, src, fmt.Errorf("primary key column %d of %d columns", i, len(cols)))
		}
		t.pk = append(t.pk, int(i))
	}
	return changeevent.EachRow(c, func(op string, before, after []any) error {
		*left--
		src.Row = r.index
		row := after
		if op == changeevent.OpDelete {
			row = before
		}
		var err error
		if r.key, err = appendKey(r.key[:0], &t, row); err == nil {
			switch r.t.cfg.Format {
			case FormatCanal:
				r.buf, err = appendCanalRow(r.buf[:0], &t, op, before, after, src)
			case FormatMaxwell:
				r.buf, err = appendMaxwellRow(r.buf[:0], &t, op, before, after, src, lastSeg && *left == 0)
			default:
				r.buf, err = changeevent.AppendEnvelope(r.buf[:0], cols, op, before, after, src)
			}
		}
		if err != nil {
			return changeevent.RowError(c.DB, c.Table, src, err)
		}
		return r.produce(ctx, topic, r.key, src)
	})
}

// Header names of the source facts every record carries, whatever its
// format.
const (
	HeaderTask   = "shepherd.task"
	HeaderServer = "shepherd.server"
	HeaderFile   = "shepherd.file"
	HeaderPos    = "shepherd.pos"
	HeaderGTID   = "shepherd.gtid"
	HeaderTSMS   = "shepherd.ts_ms"
	HeaderRow    = "shepherd.row"
)

// produce sends r.buf with key in the open transaction, asynchronously.
func (r *run) produce(ctx context.Context, topic string, key []byte, src *changeevent.Source) error {
	if err := r.failed(); err != nil {
		return err
	}
	if err := r.t.ensureTopic(ctx, topic, false); err != nil {
		return err
	}
	rec := &kgo.Record{Topic: topic, Value: append([]byte(nil), r.buf...), Headers: []kgo.RecordHeader{
		{Key: HeaderTask, Value: []byte(src.Task)},
		{Key: HeaderServer, Value: []byte(src.Server)},
		{Key: HeaderFile, Value: []byte(src.File)},
		{Key: HeaderPos, Value: strconv.AppendUint(nil, uint64(src.Pos), 10)},
		{Key: HeaderGTID, Value: []byte(src.GTID)},
		{Key: HeaderTSMS, Value: strconv.AppendInt(nil, src.TSMS, 10)},
		{Key: HeaderRow, Value: strconv.AppendInt(nil, int64(src.Row), 10)},
	}}
	if key != nil {
		rec.Key = append([]byte(nil), key...)
	}
	if r.p.BufferedProduceRecords() >= maxBuffered-1 {
		// Make room first: Produce would wait for it without bound.
		if err := flush(ctx, r.p); err != nil {
			return err
		}
	}
	r.p.Produce(ctx, rec, r.promise)
	r.index++
	return nil
}

// flush waits until the brokers have answered for every record produced
// by p, at most deliveryTimeout: a record sent on a connection that broke
// is otherwise retried without end, and the transaction is abandoned
// anyway (the next claim's producer aborts it).
func flush(ctx context.Context, p *kgo.Client) error {
	ctx, cancel := context.WithTimeout(ctx, deliveryTimeout)
	defer cancel()
	if err := p.Flush(ctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("the Kafka brokers did not acknowledge the produced events within %v: %w", deliveryTimeout, err)
		}
		return err
	}
	return nil
}

// Flush commits when the batch is full or the stream has nothing more
// ready: the checkpoint record joins the transaction, every record is
// acknowledged, and the transaction commits — events and checkpoint
// together, or neither. A fenced producer's commit fails.
func (r *run) Flush(ctx context.Context, more bool) error {
	if !r.batch.Due(r.t.env.BatchRows, more) {
		return nil
	}
	st, end := r.batch.Stored(r.base, r.epoch, r.owner), r.batch.End
	r.p.Produce(ctx, r.t.record(st), r.promise)
	if err := flush(ctx, r.p); err != nil {
		return err
	}
	if err := r.failed(); err != nil {
		return r.t.fencedOr(ctx, r.epoch, err)
	}
	if err := endTransaction(ctx, r.p); err != nil {
		return r.t.fencedOr(ctx, r.epoch, fmt.Errorf("commit the checkpoint %s of task %q with its events: %w", end, r.t.env.Task, err))
	}
	r.inTxn = false
	r.base = st
	r.batch.Committed()
	return nil
}

// InFlight is nil: Flush waits for the transaction itself.
func (r *run) InFlight() <-chan error { return nil }

func (r *run) Landed(ctx context.Context, err error) error { return err }

func (r *run) Idle() bool { return r.batch.Idle() }

// Close aborts the open transaction and closes the producer; what the
// broker cannot abort now, the next claim's producer does.
func (r *run) Close() {
	if r.closed {
		return
	}
	r.closed = true
	if r.inTxn {
		abort(r.p)
	}
	r.p.Close()
}
