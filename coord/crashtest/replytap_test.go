package crashtest

import (
	"encoding/binary"
	"net"
	"sync/atomic"
)

// replyTap records the zxid carried by the header of the last reply a
// client received to one of its requests. go-zookeeper's Create and Delete
// drop it, and the crash test needs it: it is a created znode's czxid and
// its parent's pzxid. The record is exact only while the client has one
// request outstanding and neither watches nor auth (their replies would
// count too); the crash test's clients do nothing else.
type replyTap struct {
	last atomic.Int64
}

// lastZxid returns the zxid of the latest reply to a request.
func (r *replyTap) lastZxid() int64 { return r.last.Load() }

// Sizes of the ZooKeeper frames the tap parses: a 4-byte length prefix,
// then for every frame but the connect response a reply header of xid
// int32, zxid int64, err int32.
const (
	framePrefixSize = 4
	replyHeaderSize = 16
)

// tappedConn feeds everything the client reads through a frame parser. Only
// go-zookeeper's receiving goroutine reads (its connect handshake runs
// before that goroutine starts), so the parser state needs no lock.
type tappedConn struct {
	net.Conn
	tap      *replyTap
	frames   frameParser
	connSeen bool // the first frame, the connect response, has no reply header
}

func (c *tappedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.frames.feed(p[:n], c.onFrame)
	return n, err
}

func (c *tappedConn) onFrame(head []byte) {
	if !c.connSeen {
		c.connSeen = true
		return
	}
	if len(head) < framePrefixSize+replyHeaderSize {
		return
	}
	xid := int32(binary.BigEndian.Uint32(head[4:8]))
	zxid := int64(binary.BigEndian.Uint64(head[8:16]))
	// Negative xids are pings (-2), notifications (-1) and set-watches (-8).
	if xid > 0 {
		c.tap.last.Store(zxid)
	}
}

// frameParser splits a byte stream of length-prefixed frames and hands the
// first bytes of each complete frame (prefix plus reply header) to a
// callback.
type frameParser struct {
	head []byte // the current frame's prefix and first header bytes
	size int    // the current frame's body length, once the prefix is read
	got  int    // body bytes consumed so far
}

func (f *frameParser) feed(b []byte, onFrame func(head []byte)) {
	for len(b) > 0 {
		if len(f.head) < framePrefixSize {
			k := min(framePrefixSize-len(f.head), len(b))
			f.head = append(f.head, b[:k]...)
			b = b[k:]
			if len(f.head) == framePrefixSize {
				f.size = int(binary.BigEndian.Uint32(f.head))
				f.got = 0
				if f.size == 0 {
					f.end(onFrame)
				}
			}
			continue
		}
		k := min(f.size-f.got, len(b))
		if want := framePrefixSize + replyHeaderSize - len(f.head); want > 0 {
			f.head = append(f.head, b[:min(want, k)]...)
		}
		f.got += k
		b = b[k:]
		if f.got == f.size {
			f.end(onFrame)
		}
	}
}

func (f *frameParser) end(onFrame func(head []byte)) {
	onFrame(f.head)
	f.head = f.head[:0]
}
