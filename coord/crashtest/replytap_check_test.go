package crashtest

import (
	"encoding/binary"
	"testing"
)

// TestFrameParserFindsReplyZxids feeds a server's byte stream to the tap in
// every chunking and checks that it skips the connect response, pings and
// notifications and keeps the zxid of the last reply to a request.
func TestFrameParserFindsReplyZxids(t *testing.T) {
	frame := func(body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	reply := func(xid int32, zxid int64, payload int) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(xid))
		b = binary.BigEndian.AppendUint64(b, uint64(zxid))
		b = binary.BigEndian.AppendUint32(b, 0)
		return frame(append(b, make([]byte, payload)...))
	}
	// The connect response's bytes would read as xid 1, zxid 0x77 if the
	// tap took it for a reply.
	connect := frame(reply(1, 0x77, 20)[4:])
	tests := []struct {
		name   string
		stream [][]byte
		want   int64
	}{
		{"connect response only", [][]byte{connect}, 0},
		{"one reply", [][]byte{connect, reply(1, 0x10, 50)}, 0x10},
		{"reply then ping", [][]byte{connect, reply(5, 0x20, 0), reply(-2, 0x99, 0)}, 0x20},
		{"reply then notification", [][]byte{connect, reply(5, 0x21, 8), reply(-1, 0x98, 30)}, 0x21},
		{"latest of two replies", [][]byte{connect, reply(5, 0x30, 3), reply(6, 0x31, 0)}, 0x31},
		{"empty frame between replies", [][]byte{connect, reply(5, 0x40, 0), frame(nil), reply(7, 0x41, 1)}, 0x41},
	}
	for _, tc := range tests {
		var stream []byte
		for _, f := range tc.stream {
			stream = append(stream, f...)
		}
		for chunk := 1; chunk <= len(stream); chunk++ {
			c := &tappedConn{tap: &replyTap{}}
			for b := stream; len(b) > 0; {
				n := min(chunk, len(b))
				c.frames.feed(b[:n], c.onFrame)
				b = b[n:]
			}
			if got := c.tap.lastZxid(); got != tc.want {
				t.Errorf("%s, fed %d bytes at a time: last zxid %#x, want %#x", tc.name, chunk, got, tc.want)
				break
			}
		}
	}
}
