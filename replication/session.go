package replication

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// targetSession sends the applier's statements to the target over one
// connection, several statements per round trip, one packet in flight
// while the applier builds the next.
//
// Statements are queued and sent as one multi-statement packet when the
// packet is full or the transaction commits: BEGIN, the row statements,
// the checkpoint UPDATE and COMMIT of a small batch travel together. The
// server stops at the first failing statement, so a failure never reaches
// the COMMIT behind it. The checkpoint's fence must therefore fail as an
// error, not as "0 rows matched": the UPDATE sets
// epoch = IF(epoch <= mine, mine, NULL), and the NOT NULL column makes a
// newer stored epoch an error in strict mode (which every session uses).
//
// Pipelining: a packet, the committing one included, is executed by a
// goroutine of its own while the applier goes on decoding and building
// the next one; the next packet is sent only after the previous one
// succeeded (the connection serves one statement at a time anyway, and a
// failed packet must not be followed by anything). So the target parses
// and executes while the core prepares, instead of each waiting for the
// other. A commit counts only once its packet has succeeded: the
// applier's onCommit runs then (from landed), never when it is handed
// over. Everything else that uses the connection first waits for the
// packet in flight (settle).
//
// When a packet fails for a reason a retry cannot fix, the transaction is
// rolled back and replayed one statement at a time to name the statement
// the target refuses (diagnose); the statements already sent in the
// transaction are kept for that, up to diagnoseLimit bytes.
type targetSession struct {
	conn   *sql.Conn
	ckpt   checkpointStore
	epoch  int64
	owner  string
	open   bool      // BEGIN queued or sent
	packet []byte    // queued statements, separated by ";\n"
	sent   []*flight // packets sent in the open transaction, for diagnose
	kept   int       // bytes in sent
	lost   bool      // sent outgrew diagnoseLimit and was dropped
	where  func() Position
	fly    *flight // the packet being executed, nil when none
	// base is the checkpoint position the next commit moves from: the
	// one Run claimed, then that of the last commit sent.
	base Position
}

// flight is a packet handed to the target and not yet answered: a text
// packet (q), or one execution of a prepared statement (text renders it
// as SQL text for messages and diagnose).
type flight struct {
	done chan error // the packet's outcome; buffered, written once
	q    string
	text func() string
	size int      // bytes it holds, for diagnoseLimit
	at   Position // the source transaction it was built from
	// For a committing packet: the earlier packets of its transaction
	// (for diagnose), and what to call once it succeeded.
	sent      []*flight
	lost      bool
	committed func()
	base      Position // the checkpoint position it moves from
}

// sql is the flight's statements as text.
func (f *flight) sql() string {
	if f.text != nil {
		return f.text()
	}
	return f.q
}

const (
	// maxPacketBytes bounds a multi-statement packet: far below the
	// smallest max_allowed_packet in use (4 MiB on old servers), and large
	// enough that round trips stop mattering.
	maxPacketBytes = 1 << 20
	diagnoseLimit  = 32 << 20
)

// begin opens a transaction if none is open.
func (s *targetSession) begin() {
	if !s.open {
		s.open = true
		s.packet = append(s.packet[:0], "BEGIN"...)
	}
}

// queue adds a statement to the open transaction. Statements never hold
// a raw newline (literals escape it), so ";\n" separates them
// unambiguously when diagnose splits a packet.
func (s *targetSession) queue(ctx context.Context, stmt []byte) error {
	s.begin()
	if len(s.packet) > 0 {
		s.packet = append(s.packet, ";\n"...)
	}
	s.packet = append(s.packet, stmt...)
	if len(s.packet) >= maxPacketBytes {
		return s.send(ctx, nil)
	}
	return nil
}

// send hands the queued packet to the target once the one in flight has
// succeeded. committed, for the packet that ends a transaction, is
// called when it has succeeded.
func (s *targetSession) send(ctx context.Context, committed func()) error {
	if len(s.packet) == 0 {
		return nil
	}
	q := string(s.packet)
	s.packet = s.packet[:0]
	f := &flight{q: q, size: len(q), committed: committed}
	return s.launch(ctx, f, func() error {
		_, err := s.conn.ExecContext(ctx, q)
		return err
	})
}

// execPrepared executes st with args in the open transaction, after the
// statements queued before it; text renders it as SQL text, and size is
// about the bytes args hold.
func (s *targetSession) execPrepared(ctx context.Context, st *sql.Stmt, args []any, size int, text func() string) error {
	s.begin()
	if err := s.send(ctx, nil); err != nil {
		return err
	}
	return s.launch(ctx, &flight{text: text, size: size}, func() error {
		_, err := st.ExecContext(ctx, args...)
		return err
	})
}

// launch starts run, which executes f, once the flight before it has
// succeeded.
func (s *targetSession) launch(ctx context.Context, f *flight, run func() error) error {
	if err := s.settle(ctx); err != nil {
		return err
	}
	f.done, f.at = make(chan error, 1), s.where()
	if f.committed != nil {
		f.sent, f.lost = s.sent, s.lost
		s.sent, s.kept, s.lost = nil, 0, false
	}
	s.fly = f
	go func() { f.done <- run() }()
	return nil
}

// inFlight is the channel the outcome of the packet in flight arrives
// on, nil when none is: Run selects on it to learn of a commit while the
// source is quiet, and then calls landed with what it received.
func (s *targetSession) inFlight() <-chan error {
	if s.fly == nil {
		return nil
	}
	return s.fly.done
}

// settle waits for the packet in flight, if any, and returns its
// failure.
func (s *targetSession) settle(ctx context.Context) error {
	if s.fly == nil {
		return nil
	}
	return s.landed(ctx, <-s.fly.done)
}

// landed takes the outcome err of the packet in flight.
func (s *targetSession) landed(ctx context.Context, err error) error {
	f := s.fly
	s.fly = nil
	if err != nil {
		sent, lost := s.sent, s.lost
		if f.committed != nil {
			// The failed transaction is the committing packet's, not
			// the one the applier may have begun since.
			sent, lost = f.sent, f.lost
		}
		return s.failed(ctx, f, sent, lost, err)
	}
	if f.committed != nil {
		f.committed()
		return nil
	}
	if !s.lost {
		s.sent = append(s.sent, f)
		s.kept += f.size
		if s.kept > diagnoseLimit {
			s.sent, s.kept, s.lost = nil, 0, true
		}
	}
	return nil
}

// commit queues the checkpoint — pos, and state, the history followed up
// to it — and COMMIT and sends them; committed is called once they
// succeeded. The session is ready for the next transaction at once.
func (s *targetSession) commit(ctx context.Context, pos Position, state followedState, snapshot *string, committed func()) error {
	s.begin()
	if err := s.queue(ctx, s.ckpt.commitStatement(s.base, pos, state, s.epoch, s.owner, snapshot)); err != nil {
		return err
	}
	if len(s.packet) > 0 {
		s.packet = append(s.packet, ";\n"...)
	}
	s.packet = append(s.packet, "COMMIT"...)
	base := s.base
	if err := s.send(ctx, committed); err != nil {
		return err
	}
	s.fly.base = base
	s.base, s.open = pos, false
	return nil
}

// idle reports whether no transaction is open or committing.
func (s *targetSession) idle() bool { return !s.open && s.fly == nil }

func (s *targetSession) reset() {
	s.open, s.packet, s.sent, s.kept, s.lost = false, s.packet[:0], nil, 0, false
}

// rollback ends the open transaction, if any, without its changes, after
// the packet in flight has landed (its outcome no longer matters: a
// committing one is not reported, and Run re-reads the checkpoint). It
// uses its own short deadline: it also runs after ctx was cancelled, and
// on a broken connection the server rolls back by itself anyway.
func (s *targetSession) rollback() {
	if s.fly != nil {
		<-s.fly.done
		s.fly = nil
	}
	if s.open {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = s.conn.ExecContext(ctx, "ROLLBACK")
	}
	s.reset()
}

// failed turns the failed packet f, sent after the packets sent of its
// transaction (unless lost), into the error Run acts on.
func (s *targetSession) failed(ctx context.Context, f *flight, sent []*flight, lost bool, err error) error {
	if retryable(err) {
		return newApplyError(f.sql(), f.at, err)
	}
	s.open = true // the failed transaction, whatever was begun since
	s.rollback()
	if row, ok, rerr := s.ckpt.read(ctx, s.conn); rerr == nil && ok {
		switch {
		case row.Epoch > s.epoch:
			return fmt.Errorf("%w: task %q: epoch %d is older than the stored epoch %d of owner %q", ErrFenced, s.ckpt.task, s.epoch, row.Epoch, row.Owner)
		case f.committed != nil && row.Position != f.base:
			// Not wrapping err: the server's "cannot be null" would make
			// it look permanent. Run resumes from the stored position.
			return fmt.Errorf("the checkpoint of task %q is at %s, not at %s where this Run's commit expected it: a transaction of an earlier Run of epoch %d, whose client was gone, committed on the target meanwhile (%v); resuming from the checkpoint",
				s.ckpt.task, row.Position, f.base, s.epoch, err)
		}
	}
	whole := newApplyError(f.sql(), f.at, err)
	if lost {
		return nonRetryable(whole)
	}
	return nonRetryable(s.diagnose(ctx, append(sent, f), whole, f.at))
}

// diagnose replays the failed transaction's packets statement by
// statement, inside a transaction it rolls back, to find the statement
// the target refuses; whole is the error of the packet when none does.
func (s *targetSession) diagnose(ctx context.Context, packets []*flight, whole error, at Position) error {
	defer s.rollback()
	if _, err := s.conn.ExecContext(ctx, "BEGIN"); err != nil {
		return whole
	}
	s.open = true
	for _, p := range packets {
		for _, stmt := range strings.Split(p.sql(), ";\n") {
			if stmt == "BEGIN" || stmt == "COMMIT" {
				continue
			}
			if _, err := s.conn.ExecContext(ctx, stmt); err != nil {
				return newApplyError(stmt, at, err)
			}
		}
	}
	return whole
}
