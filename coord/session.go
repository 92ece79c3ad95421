package coord

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"sync/atomic"
	"time"
)

// session is a client session as the pipeline tracks it. The durable part
// (id, timeout, ephemerals) lives in the tree, so that sessions survive a
// restart; this adds the volatile part: liveness and the current connection.
type session struct {
	id      int64
	timeout time.Duration
	// lastSeen is the UnixNano of the last packet from the session's client;
	// readers update it without the pipeline.
	lastSeen atomic.Int64
	conn     *conn // owned by the pipeline; nil while the client is away
}

func newSession(id int64, timeout time.Duration) *session {
	s := &session{id: id, timeout: timeout}
	s.touch()
	return s
}

func (s *session) touch() { s.lastSeen.Store(time.Now().UnixNano()) }

func (s *session) expired(now time.Time) bool {
	return now.UnixNano()-s.lastSeen.Load() > int64(s.timeout)
}

// password derives a session's password from the server secret, so it need
// not be stored and stays the same after a restart (ZooKeeper derives it from
// the session id and a fixed seed; a per-installation secret is not guessable).
func (s *Server) password(id int64) []byte {
	m := hmac.New(sha256.New, s.secret)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(id))
	m.Write(b[:])
	return m.Sum(nil)[:16]
}

// firstSessionID mirrors ZooKeeper's scheme: the start time in the high bits
// (so ids from different runs do not collide) and a counter below them.
func firstSessionID(now time.Time) int64 {
	return int64(uint64(now.UnixMilli()<<24) >> 8)
}

// negotiateTimeout clamps what the client asked for into the server's bounds.
func (s *Server) negotiateTimeout(requestedMs int32) time.Duration {
	d := time.Duration(requestedMs) * time.Millisecond
	if d < s.cfg.MinSessionTimeout {
		d = s.cfg.MinSessionTimeout
	}
	if d > s.cfg.MaxSessionTimeout {
		d = s.cfg.MaxSessionTimeout
	}
	return d
}
