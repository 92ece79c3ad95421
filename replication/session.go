package replication

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// targetSession sends the applier's statements to the target over one
// connection, several statements per round trip.
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
// When a packet fails for a reason a retry cannot fix, the transaction is
// rolled back and replayed one statement at a time to name the statement
// the target refuses (diagnose); the statements already sent in the
// transaction are kept for that, up to diagnoseLimit bytes.
type targetSession struct {
	conn   *sql.Conn
	ckpt   checkpointStore
	epoch  int64
	owner  string
	open   bool     // BEGIN queued or sent
	packet []byte   // queued statements, separated by ";\n"
	sent   []string // packets sent in the open transaction, for diagnose
	kept   int      // bytes in sent
	lost   bool     // sent outgrew diagnoseLimit and was dropped
	where  func() Position
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
		return s.send(ctx)
	}
	return nil
}

// send executes the queued packet.
func (s *targetSession) send(ctx context.Context) error {
	if len(s.packet) == 0 {
		return nil
	}
	q := string(s.packet)
	s.packet = s.packet[:0]
	if _, err := s.conn.ExecContext(ctx, q); err != nil {
		return s.failed(ctx, q, err)
	}
	if !s.lost {
		s.sent = append(s.sent, q)
		s.kept += len(q)
		if s.kept > diagnoseLimit {
			s.sent, s.kept, s.lost = nil, 0, true
		}
	}
	return nil
}

// commit queues the checkpoint and COMMIT and sends them.
func (s *targetSession) commit(ctx context.Context, pos Position) error {
	s.begin()
	if err := s.queue(ctx, s.ckpt.commitStatement(pos, s.epoch, s.owner)); err != nil {
		return err
	}
	if len(s.packet) > 0 {
		s.packet = append(s.packet, ";\n"...)
	}
	s.packet = append(s.packet, "COMMIT"...)
	if err := s.send(ctx); err != nil {
		return err
	}
	s.reset()
	return nil
}

func (s *targetSession) reset() {
	s.open, s.packet, s.sent, s.kept, s.lost = false, s.packet[:0], nil, 0, false
}

// rollback ends the open transaction, if any, without its changes. It
// uses its own short deadline: it also runs after ctx was cancelled, and
// on a broken connection the server rolls back by itself anyway.
func (s *targetSession) rollback() {
	if s.open {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = s.conn.ExecContext(ctx, "ROLLBACK")
	}
	s.reset()
}

// failed turns a failed packet into the error Run acts on.
func (s *targetSession) failed(ctx context.Context, q string, err error) error {
	at := s.where()
	if retryable(err) {
		return newApplyError(q, at, err)
	}
	s.rollback()
	if row, ok, rerr := s.ckpt.read(ctx, s.conn); rerr == nil && ok && row.Epoch > s.epoch {
		return fmt.Errorf("%w: task %q: epoch %d is older than the stored epoch %d of owner %q", ErrFenced, s.ckpt.task, s.epoch, row.Epoch, row.Owner)
	}
	return nonRetryable(s.diagnose(ctx, q, err, at))
}

// diagnose replays the failed transaction statement by statement, inside
// a transaction it rolls back, to find the statement the target refuses.
func (s *targetSession) diagnose(ctx context.Context, failedPacket string, packetErr error, at Position) error {
	whole := newApplyError(failedPacket, at, packetErr)
	if s.lost {
		return whole
	}
	packets := append(s.sent, failedPacket)
	defer s.rollback()
	if _, err := s.conn.ExecContext(ctx, "BEGIN"); err != nil {
		return whole
	}
	s.open = true
	for _, p := range packets {
		for _, stmt := range strings.Split(p, ";\n") {
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
