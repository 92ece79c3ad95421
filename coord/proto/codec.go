package proto

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrShortBuffer reports a record that ends before all of its fields.
var ErrShortBuffer = errors.New("proto: record truncated")

// ErrBadLength reports a negative or impossible length prefix.
var ErrBadLength = errors.New("proto: bad length prefix")

// Record is a jute record. Decode reports failures through the Decoder's
// sticky error, so a record's Decode is a straight list of field reads.
type Record interface {
	Encode(e *Encoder)
	Decode(d *Decoder)
}

// Encoder appends jute-encoded fields to a byte slice.
type Encoder struct {
	buf []byte
}

// NewEncoder returns an encoder that appends to buf (which may be nil).
func NewEncoder(buf []byte) *Encoder { return &Encoder{buf: buf} }

// Bytes returns the encoded bytes.
func (e *Encoder) Bytes() []byte { return e.buf }

// Len returns the number of bytes encoded so far.
func (e *Encoder) Len() int { return len(e.buf) }

// Reset empties the encoder, keeping its buffer.
func (e *Encoder) Reset() { e.buf = e.buf[:0] }

// Int writes a jute int (big-endian int32).
func (e *Encoder) Int(v int32) { e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(v)) }

// Long writes a jute long (big-endian int64).
func (e *Encoder) Long(v int64) { e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v)) }

// Bool writes a jute boolean (one byte).
func (e *Encoder) Bool(v bool) {
	if v {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
}

// Buffer writes a jute buffer: an int length then the bytes. A nil slice is
// written as length -1, which is how ZooKeeper tells "no data" from "empty".
func (e *Encoder) Buffer(b []byte) {
	if b == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(b)))
	e.buf = append(e.buf, b...)
}

// String writes a jute ustring: an int length then UTF-8 bytes.
func (e *Encoder) String(s string) {
	e.Int(int32(len(s)))
	e.buf = append(e.buf, s...)
}

// Strings writes a vector<ustring>. A nil slice is written as length -1.
func (e *Encoder) Strings(v []string) {
	if v == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(v)))
	for _, s := range v {
		e.String(s)
	}
}

// Record writes a nested record.
func (e *Encoder) Record(r Record) { r.Encode(e) }

// Decoder reads jute-encoded fields from a byte slice. The first failure is
// remembered and every later read returns a zero value, so callers check
// Err once at the end.
type Decoder struct {
	buf []byte
	off int
	err error
}

// NewDecoder returns a decoder over b.
func NewDecoder(b []byte) *Decoder { return &Decoder{buf: b} }

// Err returns the first decoding error, if any.
func (d *Decoder) Err() error { return d.err }

// Remaining returns the number of unread bytes.
func (d *Decoder) Remaining() int { return len(d.buf) - d.off }

// Offset returns the number of bytes read so far.
func (d *Decoder) Offset() int { return d.off }

// Fail records err as the decoder's error unless one is already recorded.
func (d *Decoder) Fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > d.Remaining() {
		d.err = ErrShortBuffer
		return nil
	}
	b := d.buf[d.off : d.off+n]
	d.off += n
	return b
}

// Int reads a jute int.
func (d *Decoder) Int() int32 {
	b := d.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

// Long reads a jute long.
func (d *Decoder) Long() int64 {
	b := d.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// Bool reads a jute boolean. Any non-zero byte is true, as in Java.
func (d *Decoder) Bool() bool {
	b := d.take(1)
	return b != nil && b[0] != 0
}

// length reads a length prefix; -1 means nil. Lengths are checked against
// the bytes left (each element takes at least minElem bytes) so a hostile
// prefix cannot make us allocate more than the packet holds.
func (d *Decoder) length(minElem int) (n int, isNil bool) {
	v := d.Int()
	if d.err != nil {
		return 0, false
	}
	if v == -1 {
		return 0, true
	}
	if v < 0 || (minElem > 0 && int64(v)*int64(minElem) > int64(d.Remaining())) {
		d.err = fmt.Errorf("%w: %d with %d bytes left", ErrBadLength, v, d.Remaining())
		return 0, false
	}
	return int(v), false
}

// Buffer reads a jute buffer. A length of -1 yields nil. The result is a
// copy, safe to keep after the packet buffer is reused.
func (d *Decoder) Buffer() []byte {
	n, isNil := d.length(1)
	if isNil || d.err != nil {
		return nil
	}
	b := d.take(n)
	if b == nil {
		return nil
	}
	out := make([]byte, n)
	copy(out, b)
	return out
}

// String reads a jute ustring. A length of -1 yields "".
func (d *Decoder) String() string {
	n, isNil := d.length(1)
	if isNil || d.err != nil {
		return ""
	}
	return string(d.take(n))
}

// Strings reads a vector<ustring>. A length of -1 yields nil.
func (d *Decoder) Strings() []string {
	n, isNil := d.length(4)
	if isNil || d.err != nil {
		return nil
	}
	out := make([]string, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, d.String())
	}
	return out
}

// VectorLen reads the length of a vector whose elements take at least
// minElem bytes each; -1 (nil) is returned as 0 with isNil set.
func (d *Decoder) VectorLen(minElem int) (n int, isNil bool) { return d.length(minElem) }

// Record reads a nested record.
func (d *Decoder) Record(r Record) { r.Decode(d) }

// Encode serialises r into a new slice.
func Encode(r Record) []byte {
	e := NewEncoder(nil)
	r.Encode(e)
	return e.Bytes()
}

// Decode fills r from b. Trailing bytes are ignored, as ZooKeeper does:
// newer clients may append fields an older server does not know.
func Decode(b []byte, r Record) error {
	d := NewDecoder(b)
	r.Decode(d)
	return d.Err()
}
