package replication

import (
	"encoding/binary"
	"math"
	"reflect"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// This file decodes the row images of rows events for the column types
// that make up most tables — integers, YEAR, DECIMAL, FLOAT, DOUBLE, BIT,
// ENUM, SET, CHAR, VARCHAR, BINARY, VARBINARY, BLOB, TEXT (and so
// MariaDB's JSON), DATE, and the fractional-second DATETIME, TIMESTAMP
// and TIME — into exactly the values go-mysql's RowsEvent.Decode gives
// with the syncer's options (syncerConfig): the same Go types, the same
// contents, strings and BLOBs pointing into the event as go-mysql's do.
// What it saves is allocations: go-mysql boxes every value on its own,
// formats temporal values with fmt, builds DECIMAL text through a
// strings.Builder and a copy, and allocates a slice of skipped columns
// and a signedness map for every row; here the values of an event share
// a few slabs, sized from the event's first row.
//
// Anything else — another column type, metadata outside what MySQL and
// MariaDB write, MySQL's binary JSON, partial JSON updates, MariaDB's
// compressed rows events, v0 events, options other than the syncer's, a
// body that does not parse — is left to go-mysql for the whole event:
// the fast path either decodes every row of an event or none.

// rowDecoder is the syncer's RowsEventDecodeFunc (decode). It is safe for
// concurrent use: go-mysql may decode the events of a MySQL transaction
// payload on several goroutines.
type rowDecoder struct {
	// loc is the syncer's TimestampStringLocation, in which TIMESTAMP
	// values are rendered.
	loc *time.Location
	// ours and theirs count events decoded here and left to go-mysql.
	ours, theirs atomic.Int64
}

func newRowDecoder(loc *time.Location) *rowDecoder { return &rowDecoder{loc: loc} }

// decode decodes a rows event's body, with go-mysql when the fast path
// declines it.
func (d *rowDecoder) decode(e *replication.RowsEvent, data []byte) error {
	if d.fast(e, data) {
		d.ours.Add(1)
		return nil
	}
	d.theirs.Add(1)
	return e.Decode(data)
}

// The rows event's settings are unexported in go-mysql; they are read by
// reflection, checked once here against what this file expects. If
// go-mysql's RowsEvent changes shape, the fast path turns itself off.
var rowsEventFields = func() (f struct {
	ok                                                    bool
	eventType, compressed, parseTime, useDecimal, tsLocat int
}) {
	t := reflect.TypeFor[replication.RowsEvent]()
	field := func(name string, kind reflect.Kind) int {
		sf, found := t.FieldByName(name)
		if !found || sf.Type.Kind() != kind || len(sf.Index) != 1 {
			return -1
		}
		return sf.Index[0]
	}
	f.eventType = field("eventType", reflect.Uint8)
	f.compressed = field("compressed", reflect.Bool)
	f.parseTime = field("parseTime", reflect.Bool)
	f.useDecimal = field("useDecimal", reflect.Bool)
	f.tsLocat = field("timestampStringLocation", reflect.Pointer)
	f.ok = f.eventType >= 0 && f.compressed >= 0 && f.parseTime >= 0 && f.useDecimal >= 0 && f.tsLocat >= 0
	return f
}()

// fastRowsEvent says whether e is an event the fast path may decode: a
// v1 or v2 write, update or delete event, not compressed, decoded with
// the options the fast path reproduces. It also says whether its rows
// come in before/after pairs.
func (d *rowDecoder) fastRowsEvent(e *replication.RowsEvent) (ok, update bool) {
	f := &rowsEventFields
	if !f.ok {
		return false, false
	}
	v := reflect.ValueOf(e).Elem()
	if v.Field(f.compressed).Bool() || v.Field(f.parseTime).Bool() || v.Field(f.useDecimal).Bool() ||
		v.Field(f.tsLocat).Pointer() != uintptr(unsafe.Pointer(d.loc)) || d.loc == nil {
		return false, false
	}
	switch replication.EventType(v.Field(f.eventType).Uint()) {
	case replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2,
		replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2:
		return true, false
	case replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2:
		return true, true
	}
	return false, false
}

// colKind is how a column's values are decoded.
type colKind uint8

const (
	kTiny colKind = iota
	kTinyU
	kShort
	kShortU
	kInt24
	kInt24U
	kLong
	kLongU
	kLongLong
	kLongLongU
	kYear
	kFloat
	kDouble
	kDecimal   // prec, scale
	kBit       // size: bytes
	kEnum      // size: 1 or 2 bytes
	kSet       // size: 1 to 8 bytes
	kString    // size: bytes of the length (1 or 2)
	kBlob      // size: bytes of the length (1 to 4)
	kDate      //
	kDatetime2 // dec
	kTimestamp2
	kTime2
)

// colPlan is one column of a table as the fast path decodes it.
type colPlan struct {
	kind        colKind
	size        uint8 // see colKind
	dec         uint8 // fractional digits of temporal types
	prec, scale uint8 // DECIMAL
	nbits       uint16
}

// box kinds: the Go types go-mysql gives values, each with a slab.
const (
	bNone = iota // boxed without allocating (one-byte values), or nil
	bInt16
	bUint16
	bInt32
	bUint32
	bInt64
	bUint64
	bInt
	bFloat32
	bFloat64
	bString
	bBytes
	nBoxKinds
)

func (c colPlan) box() int {
	switch c.kind {
	case kTiny, kTinyU:
		return bNone
	case kShort:
		return bInt16
	case kShortU:
		return bUint16
	case kInt24, kLong:
		return bInt32
	case kInt24U, kLongU:
		return bUint32
	case kLongLong, kBit, kEnum, kSet:
		return bInt64
	case kLongLongU:
		return bUint64
	case kYear:
		return bInt
	case kFloat:
		return bFloat32
	case kDouble:
		return bFloat64
	case kBlob:
		return bBytes
	}
	return bString
}

// maxText bounds the text of one formatted value (DECIMAL of 65 digits
// and its sign and point; temporal values with the widest fields go-mysql
// can print for any bytes).
const maxText = 80

// planColumns describes the first n columns of table map t, or says the
// fast path cannot decode them.
func planColumns(t *replication.TableMapEvent, n int, plan []colPlan) ([]colPlan, bool) {
	if n > len(t.ColumnType) || n > len(t.ColumnMeta) {
		return plan, false
	}
	// Signedness as go-mysql's TableMapEvent.UnsignedMap reads it: one
	// bit per numeric column, high bit first; columns past the bitmap's
	// end are signed.
	sign, bit := t.SignednessBitmap, 0
	for i := range n {
		meta := t.ColumnMeta[i]
		c := colPlan{}
		u := false
		if len(sign) > 0 && t.IsNumericColumn(i) {
			u = bit/8 < len(sign) && sign[bit/8]&(0x80>>(bit%8)) != 0
			bit++
		}
		switch tp := t.ColumnType[i]; tp {
		case gomysql.MYSQL_TYPE_TINY:
			c.kind = pick(u, kTinyU, kTiny)
		case gomysql.MYSQL_TYPE_SHORT:
			c.kind = pick(u, kShortU, kShort)
		case gomysql.MYSQL_TYPE_INT24:
			c.kind = pick(u, kInt24U, kInt24)
		case gomysql.MYSQL_TYPE_LONG:
			c.kind = pick(u, kLongU, kLong)
		case gomysql.MYSQL_TYPE_LONGLONG:
			c.kind = pick(u, kLongLongU, kLongLong)
		case gomysql.MYSQL_TYPE_YEAR:
			c.kind = kYear
		case gomysql.MYSQL_TYPE_FLOAT:
			c.kind = kFloat
		case gomysql.MYSQL_TYPE_DOUBLE:
			c.kind = kDouble
		case gomysql.MYSQL_TYPE_NEWDECIMAL:
			c.kind, c.prec, c.scale = kDecimal, uint8(meta>>8), uint8(meta)
			if c.prec == 0 || c.prec > 65 || c.scale > 30 || c.scale > c.prec {
				return plan, false
			}
		case gomysql.MYSQL_TYPE_BIT:
			c.kind, c.nbits = kBit, (meta>>8)*8+meta&0xFF
			c.size = uint8((c.nbits + 7) / 8)
			if c.nbits == 0 || c.size > 8 {
				return plan, false
			}
		case gomysql.MYSQL_TYPE_VARCHAR, gomysql.MYSQL_TYPE_VAR_STRING:
			c.kind, c.size = kString, pick(meta < 256, uint8(1), uint8(2))
		case gomysql.MYSQL_TYPE_STRING:
			// CHAR, BINARY, ENUM and SET: the real type and the length
			// share the metadata (decodeValue's rules).
			length, real := int(meta), tp
			if meta >= 256 {
				b0, b1 := uint8(meta>>8), uint8(meta)
				if b0&0x30 != 0x30 {
					length, real = int(uint16(b1)|uint16((b0&0x30)^0x30)<<4), b0|0x30
				} else {
					length, real = int(meta&0xFF), b0
				}
			}
			switch real {
			case gomysql.MYSQL_TYPE_STRING:
				c.kind, c.size = kString, pick(length < 256, uint8(1), uint8(2))
			case gomysql.MYSQL_TYPE_ENUM:
				c.kind, c.size = kEnum, uint8(meta)
				if c.size != 1 && c.size != 2 {
					return plan, false
				}
			case gomysql.MYSQL_TYPE_SET:
				c.kind, c.size = kSet, uint8(meta)
				if c.size < 1 || c.size > 8 {
					return plan, false
				}
			default:
				return plan, false
			}
		case gomysql.MYSQL_TYPE_BLOB:
			c.kind, c.size = kBlob, uint8(meta)
			if meta < 1 || meta > 4 {
				return plan, false
			}
		case gomysql.MYSQL_TYPE_DATE:
			c.kind = kDate
		case gomysql.MYSQL_TYPE_DATETIME2, gomysql.MYSQL_TYPE_TIMESTAMP2, gomysql.MYSQL_TYPE_TIME2:
			c.kind, c.dec = kTime2, uint8(meta)
			if tp == gomysql.MYSQL_TYPE_DATETIME2 {
				c.kind = kDatetime2
			} else if tp == gomysql.MYSQL_TYPE_TIMESTAMP2 {
				c.kind = kTimestamp2
			}
			if meta > 6 {
				return plan, false
			}
		default:
			return plan, false
		}
		plan = append(plan, c)
	}
	return plan, true
}

func pick[T any](cond bool, a, b T) T {
	if cond {
		return a
	}
	return b
}

// fast decodes e's rows, or returns false having changed nothing that
// go-mysql's Decode does not set again.
func (d *rowDecoder) fast(e *replication.RowsEvent, data []byte) bool {
	eventOK, update := d.fastRowsEvent(e)
	if !eventOK {
		return false
	}
	pos, ok := decodeHeader(e, data)
	if !ok {
		return false
	}
	n := int(e.ColumnCount)
	var planBuf [64]colPlan
	plan, ok := planColumns(e.Table, n, planBuf[:0])
	if !ok || n == 0 {
		return false
	}
	st := rowState{plan: plan, data: data, loc: d.loc}
	st.imgs[0] = newImage(plan, e.ColumnBitmap1)
	st.nimg = 1
	if update {
		st.imgs[1] = newImage(plan, e.ColumnBitmap2)
		st.nimg = 2
	}
	// The first row's size says how many rows the event holds, and so
	// how large the slabs should be.
	st.p, st.rowBytes = pos, 0
	for k := range st.nimg {
		im := &st.imgs[k]
		if len(im.bitmap) != (n+7)/8 {
			return false
		}
		for i := range plan {
			if im.present(i) {
				st.perRow[plan[i].box()]++
				st.textPerRow += textMax(&plan[i])
			}
		}
		size, ok := st.measure(im, pos+st.rowBytes)
		if !ok && pos < len(data) {
			return false
		}
		st.rowBytes += size
	}
	if st.rowBytes == 0 && pos < len(data) {
		return false // rows of no bytes: the body never ends
	}
	for st.p < len(data) {
		for k := range st.nimg {
			if !st.row(&st.imgs[k]) {
				return false
			}
		}
	}
	if st.rows == nil {
		st.rows, st.skips = [][]any{}, [][]int{}
	}
	e.Rows, e.SkippedColumns = st.rows, st.skips
	return true
}

// decodeHeader is e.DecodeHeader, which panics on a short body (as
// go-mysql's own Decode then does: its recover covers the rows only).
func decodeHeader(e *replication.RowsEvent, data []byte) (pos int, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	pos, err := e.DecodeHeader(data)
	return pos, err == nil && pos <= len(data)
}

// image is the columns one row image holds.
type image struct {
	bitmap []byte
	count  int   // columns present
	skips  []int // columns absent, shared by the image's rows
}

func newImage(plan []colPlan, bitmap []byte) image {
	im := image{bitmap: bitmap}
	if len(bitmap) != (len(plan)+7)/8 {
		return im
	}
	skips := []int{}
	for i := range plan {
		if im.present(i) {
			im.count++
		} else {
			skips = append(skips, i)
		}
	}
	im.skips = skips[:len(skips):len(skips)]
	return im
}

func (im *image) present(i int) bool { return im.bitmap[i>>3]&(1<<(uint(i)&7)) != 0 }

// rowState is the fast path's work on one event: the rows so far and the
// slabs their values are boxed into.
type rowState struct {
	plan     []colPlan
	data     []byte
	loc      *time.Location
	p        int // where the next row image starts
	imgs     [2]image
	nimg     int // images per row: 2 for updates (before, after)
	rows     [][]any
	skips    [][]int
	vals     []any // free values for the next rows
	rowBytes int   // body bytes of the first row (both images of an update)
	// textPerRow bounds the formatted text of a row's values.
	textPerRow int
	perRow     [nBoxKinds]int
	slabs      slabs
	text       []byte // free arena space for formatted values
}

// rowsLeft is how many more rows (pairs of images for an update) the
// event probably holds, from the size of its first.
func (st *rowState) rowsLeft() int {
	if st.rowBytes == 0 {
		return 1
	}
	return (len(st.data)-st.p+st.rowBytes-1)/st.rowBytes + 1
}

// measure is the bytes of the row image at p, or false if it does not fit.
func (st *rowState) measure(im *image, p int) (int, bool) {
	start := p
	nullBytes := (im.count + 7) / 8
	if nullBytes > len(st.data)-p {
		return 0, false
	}
	nulls := st.data[p : p+nullBytes]
	p += nullBytes
	ni := 0
	for i := range st.plan {
		if !im.present(i) {
			continue
		}
		null := nulls[ni>>3]&(1<<(uint(ni)&7)) != 0
		ni++
		if null {
			continue
		}
		c := &st.plan[i]
		size := fixedSize(c)
		if size > len(st.data)-p {
			return 0, false
		}
		if c.kind == kString || c.kind == kBlob {
			var l uint64
			for j := size - 1; j >= 0; j-- {
				l = l<<8 | uint64(st.data[p+j])
			}
			if l > uint64(len(st.data)-p-size) {
				return 0, false
			}
			size += int(l)
		}
		p += size
	}
	return p - start, true
}

// row decodes one row image (decodeImage's rules).
func (st *rowState) row(im *image) bool {
	n := len(st.plan)
	p := st.p
	nullBytes := (im.count + 7) / 8
	if nullBytes > len(st.data)-p {
		return false
	}
	nulls := st.data[p : p+nullBytes]
	p += nullBytes
	if len(st.vals) < n {
		est := st.rowsLeft()
		if st.rows == nil {
			st.rows, st.skips = make([][]any, 0, est*st.nimg), make([][]int, 0, est*st.nimg)
		}
		st.vals = make([]any, n*est*st.nimg)
	}
	row := st.vals[:n:n]
	st.vals = st.vals[n:]
	ni := 0
	for i := range st.plan {
		if !im.present(i) {
			continue
		}
		null := nulls[ni>>3]&(1<<(uint(ni)&7)) != 0
		ni++
		if null {
			continue
		}
		var ok bool
		if row[i], p, ok = st.value(&st.plan[i], p); !ok {
			return false
		}
	}
	st.p = p
	st.rows = append(st.rows, row)
	st.skips = append(st.skips, im.skips)
	return true
}

// value decodes a value of column c at p.
func (st *rowState) value(c *colPlan, p int) (v any, end int, ok bool) {
	data := st.data[p:]
	need := fixedSize(c)
	if need < 0 || need > len(data) {
		return nil, p, false
	}
	switch c.kind {
	case kTiny:
		return int8(data[0]), p + 1, true
	case kTinyU:
		return data[0], p + 1, true
	case kShort:
		return box(&st.slabs.i16, st.slabSize(bInt16), int16(binary.LittleEndian.Uint16(data))), p + 2, true
	case kShortU:
		return box(&st.slabs.u16, st.slabSize(bUint16), binary.LittleEndian.Uint16(data)), p + 2, true
	case kInt24:
		u := uint32(data[0]) | uint32(data[1])<<8 | uint32(data[2])<<16
		if u&0x00800000 != 0 {
			u |= 0xFF000000
		}
		return box(&st.slabs.i32, st.slabSize(bInt32), int32(u)), p + 3, true
	case kInt24U:
		return box(&st.slabs.u32, st.slabSize(bUint32), uint32(data[0])|uint32(data[1])<<8|uint32(data[2])<<16), p + 3, true
	case kLong:
		return box(&st.slabs.i32, st.slabSize(bInt32), int32(binary.LittleEndian.Uint32(data))), p + 4, true
	case kLongU:
		return box(&st.slabs.u32, st.slabSize(bUint32), binary.LittleEndian.Uint32(data)), p + 4, true
	case kLongLong:
		return box(&st.slabs.i64, st.slabSize(bInt64), int64(binary.LittleEndian.Uint64(data))), p + 8, true
	case kLongLongU:
		return box(&st.slabs.u64, st.slabSize(bUint64), binary.LittleEndian.Uint64(data)), p + 8, true
	case kYear:
		y := int(data[0])
		if y != 0 {
			y += 1900
		}
		return box(&st.slabs.ints, st.slabSize(bInt), y), p + 1, true
	case kFloat:
		return box(&st.slabs.f32, st.slabSize(bFloat32), math.Float32frombits(binary.LittleEndian.Uint32(data))), p + 4, true
	case kDouble:
		return box(&st.slabs.f64, st.slabSize(bFloat64), math.Float64frombits(binary.LittleEndian.Uint64(data))), p + 8, true
	case kBit:
		var x uint64
		for _, b := range data[:c.size] {
			x = x<<8 | uint64(b)
		}
		return box(&st.slabs.i64, st.slabSize(bInt64), int64(x)), p + int(c.size), true
	case kEnum:
		x := int64(data[0])
		if c.size == 2 {
			x = int64(binary.LittleEndian.Uint16(data))
		}
		return box(&st.slabs.i64, st.slabSize(bInt64), x), p + int(c.size), true
	case kSet:
		var x uint64
		for i := int(c.size) - 1; i >= 0; i-- {
			x = x<<8 | uint64(data[i])
		}
		return box(&st.slabs.i64, st.slabSize(bInt64), int64(x)), p + int(c.size), true
	case kString:
		l, h := int(data[0]), 1
		if c.size == 2 {
			l, h = int(binary.LittleEndian.Uint16(data)), 2
		}
		if h+l > len(data) {
			return nil, p, false
		}
		return box(&st.slabs.strs, st.slabSize(bString), bytesString(data[h:h+l])), p + h + l, true
	case kBlob:
		h := int(c.size)
		var l uint64
		for i := h - 1; i >= 0; i-- {
			l = l<<8 | uint64(data[i])
		}
		if l > uint64(len(data)-h) {
			return nil, p, false
		}
		e := h + int(l)
		return box(&st.slabs.bs, st.slabSize(bBytes), data[h:e:e]), p + e, true
	}
	// Formatted as text.
	b := st.arena()
	start := len(b)
	switch c.kind {
	case kDecimal:
		b, ok = appendDecimal(b, data[:need], int(c.prec), int(c.scale))
		if !ok {
			return nil, p, false
		}
	case kDate:
		x := uint32(data[0]) | uint32(data[1])<<8 | uint32(data[2])<<16
		if x == 0 {
			b = append(b, "0000-00-00"...)
		} else {
			b = appendDate(b, int64(x/(16*32)), int64(x/32%16), int64(x%32))
		}
	case kDatetime2:
		b = appendDatetime2(b, data, int(c.dec))
	case kTimestamp2:
		b = appendTimestamp2(b, data, int(c.dec), st.loc)
	case kTime2:
		b = appendTime2(b, data, int(c.dec))
	}
	st.text = b
	return box(&st.slabs.strs, st.slabSize(bString), bytesString(b[start:])), p + need, true
}

// textMax bounds the text of a value of c formatted by the fast path.
func textMax(c *colPlan) int {
	switch c.kind {
	case kDecimal:
		return int(c.prec) + 3 // sign, point, a leading 0
	case kDate:
		return 10
	case kDatetime2, kTimestamp2, kTime2:
		return 40
	}
	return 0
}

// fixedSize is the bytes a value of c takes, or for variable-length
// columns the bytes of its length; -1 if unknown.
func fixedSize(c *colPlan) int {
	switch c.kind {
	case kTiny, kTinyU, kYear:
		return 1
	case kShort, kShortU:
		return 2
	case kInt24, kInt24U, kDate:
		return 3
	case kLong, kLongU, kFloat:
		return 4
	case kLongLong, kLongLongU, kDouble:
		return 8
	case kBit, kEnum, kSet, kString, kBlob:
		return int(c.size)
	case kDecimal:
		return decimalSize(int(c.prec), int(c.scale))
	case kDatetime2:
		return 5 + (int(c.dec)+1)/2
	case kTimestamp2:
		return 4 + (int(c.dec)+1)/2
	case kTime2:
		return 3 + (int(c.dec)+1)/2
	}
	return -1
}

// arena is free space for at least maxText bytes of formatted text.
func (st *rowState) arena() []byte {
	if cap(st.text)-len(st.text) < maxText {
		st.text = make([]byte, 0, st.textPerRow*st.rowsLeft()+maxText)
	}
	return st.text
}

// slabs hold the values of an event, one slab per Go type: a value is
// boxed by pointing an interface at its slot (boxAt) instead of
// allocating it on its own. A slot is written once, before it is boxed,
// and never again.
type slabs struct {
	i16  []int16
	u16  []uint16
	i32  []int32
	u32  []uint32
	i64  []int64
	u64  []uint64
	ints []int
	f32  []float32
	f64  []float64
	strs []string
	bs   [][]byte
}

// slabSize is the size of a new slab for values of box kind k: what the
// rows still to come need.
func (st *rowState) slabSize(k int) int { return max(st.perRow[k]*st.rowsLeft(), 1) }

// box boxes v in a slot of slab, refilled with size slots when empty.
func box[T any](slab *[]T, size int, v T) any {
	if len(*slab) == 0 {
		*slab = make([]T, size)
	}
	p := &(*slab)[0]
	*p = v
	*slab = (*slab)[1:]
	return boxAt(p)
}

// eface is the layout of an empty interface.
type eface struct {
	typ, data unsafe.Pointer
}

// boxAt is *p as an interface whose data is p itself, as the runtime's
// own boxing of a T would make with a new copy. T must not be pointer
// shaped (those are stored in the interface word): it is one of the
// slabs' types. *p must not change afterwards: an interface's value is
// immutable.
func boxAt[T any](p *T) any {
	var zero any = *new(T)
	e := eface{typ: (*eface)(unsafe.Pointer(&zero)).typ, data: unsafe.Pointer(p)}
	return *(*any)(unsafe.Pointer(&e))
}

// bytesString is b as a string sharing its bytes, as go-mysql's own
// strings share the event's: b is never written again.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

var compressedBytes = [10]int{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}

// decimalSize is the bytes of a DECIMAL(prec, scale) value.
func decimalSize(prec, scale int) int {
	intg := prec - scale
	return intg/9*4 + compressedBytes[intg%9] + scale/9*4 + compressedBytes[scale%9]
}

// appendDecimal appends the DECIMAL(prec, scale) value in b's binary form
// as go-mysql's decodeDecimal writes it, or returns false where it would
// fail.
func appendDecimal(out, data []byte, prec, scale int) ([]byte, bool) {
	intg := prec - scale
	uncompIntg, uncompFrac := intg/9, scale/9
	compIntg, compFrac := intg-uncompIntg*9, scale-uncompFrac*9
	var buf [32]byte
	d := buf[:copy(buf[:], data)]
	if len(d) == 0 || len(d) != len(data) {
		return out, false
	}
	var mask uint32
	if d[0]&0x80 == 0 {
		mask = math.MaxUint32
		out = append(out, '-')
	}
	d[0] ^= 0x80
	zeroLeading := true
	pos, v := decimalPart(compIntg, d, uint8(mask))
	if v != 0 {
		zeroLeading = false
		out = strconv.AppendUint(out, uint64(v), 10)
	}
	for range uncompIntg {
		v = binary.BigEndian.Uint32(d[pos:]) ^ mask
		pos += 4
		if zeroLeading {
			if v != 0 {
				zeroLeading = false
				out = strconv.AppendUint(out, uint64(v), 10)
			}
		} else {
			if v > 999999999 {
				return out, false
			}
			out = appendPadded(out, uint64(v), 9)
		}
	}
	if zeroLeading {
		out = append(out, '0')
	}
	if pos < len(d) {
		out = append(out, '.')
		for range uncompFrac {
			v = binary.BigEndian.Uint32(d[pos:]) ^ mask
			pos += 4
			if v > 999999999 {
				return out, false
			}
			out = appendPadded(out, uint64(v), 9)
		}
		if size, v := decimalPart(compFrac, d[pos:], uint8(mask)); size > 0 {
			out = appendPadded(out, uint64(v), compFrac)
		}
	}
	return out, true
}

// decimalPart reads the leading or trailing digits of a DECIMAL, stored in
// fewer than 4 bytes.
func decimalPart(digits int, d []byte, mask uint8) (size int, v uint32) {
	size = compressedBytes[digits]
	for i := range size {
		v = v<<8 | uint32(d[i]^mask)
	}
	return size, v
}

// appendSigned appends x as fmt's %0*d does: a minus sign, then digits
// zero padded to width characters with the sign.
func appendSigned(b []byte, x int64, width int) []byte {
	if x >= 0 {
		return appendPadded(b, uint64(x), width)
	}
	return appendPadded(append(b, '-'), uint64(-x), width-1)
}

// appendPadded appends x in decimal with at least width digits, zero
// padded (fmt's %0*d for a non-negative x).
func appendPadded(b []byte, x uint64, width int) []byte {
	digits := 1
	for y := x; y >= 10; y /= 10 {
		digits++
	}
	for ; digits < width; digits++ {
		b = append(b, '0')
	}
	return strconv.AppendUint(b, x, 10)
}

// appendDate and appendClock print fields as go-mysql's "%04d-%02d-%02d"
// and "%02d:%02d:%02d": DATETIME2 bytes go-mysql cannot make sense of
// give negative fields.
func appendDate(b []byte, y, m, d int64) []byte {
	b = appendSigned(b, y, 4)
	b = append(b, '-')
	b = appendSigned(b, m, 2)
	b = append(b, '-')
	return appendSigned(b, d, 2)
}

func appendClock(b []byte, h, m, s int64) []byte {
	b = appendSigned(b, h, 2)
	b = append(b, ':')
	b = appendSigned(b, m, 2)
	b = append(b, ':')
	return appendSigned(b, s, 2)
}

// appendFrac appends go-mysql's fraction of dec digits: frac printed with
// at least 6 digits, then the text cut by 6-dec characters.
func appendFrac(b []byte, frac int64, dec int) []byte {
	b = append(b, '.')
	b = appendPadded(b, uint64(frac), 6)
	return b[:len(b)-(6-dec)]
}

// fracOf reads the fractional seconds of a temporal value, stored in
// (dec+1)/2 bytes at d, as microseconds.
func fracOf(d []byte, dec int) int64 {
	switch dec {
	case 1, 2:
		return int64(d[0]) * 10000
	case 3, 4:
		return int64(binary.BigEndian.Uint16(d)) * 100
	case 5, 6:
		return int64(d[0])<<16 | int64(d[1])<<8 | int64(d[2])
	}
	return 0
}

// be is the big-endian unsigned integer in d.
func be(d []byte) int64 {
	var x int64
	for _, c := range d {
		x = x<<8 | int64(c)
	}
	return x
}

// appendDatetime2 is go-mysql's decodeDatetime2 without ParseTime.
func appendDatetime2(b, d []byte, dec int) []byte {
	intPart := be(d[:5]) - 0x8000000000
	frac := fracOf(d[5:], dec)
	if intPart == 0 {
		return appendZeroTime(b, frac, dec)
	}
	tmp := intPart<<24 + frac
	if tmp < 0 {
		tmp = -tmp
	}
	ymdhms := tmp >> 24
	ymd, hms := ymdhms>>17, ymdhms%(1<<17)
	ym := ymd >> 5
	b = appendDate(b, ym/13, ym%13, ymd%(1<<5))
	b = append(b, ' ')
	b = appendClock(b, hms>>12, (hms>>6)%(1<<6), hms%(1<<6))
	if dec == 0 {
		return b
	}
	return appendFrac(b, frac, dec)
}

// appendZeroTime is go-mysql's formatZeroTime.
func appendZeroTime(b []byte, frac int64, dec int) []byte {
	b = append(b, "0000-00-00 00:00:00"...)
	if dec == 0 {
		return b
	}
	return appendFrac(b, frac, dec)
}

var fracTimeLayouts = [7]string{
	"2006-01-02 15:04:05",
	"2006-01-02 15:04:05.0",
	"2006-01-02 15:04:05.00",
	"2006-01-02 15:04:05.000",
	"2006-01-02 15:04:05.0000",
	"2006-01-02 15:04:05.00000",
	"2006-01-02 15:04:05.000000",
}

// appendTimestamp2 is go-mysql's decodeTimestamp2 rendered as its
// fracTime.String does, in loc.
func appendTimestamp2(b, d []byte, dec int, loc *time.Location) []byte {
	sec := be(d[:4])
	usec := fracOf(d[4:], dec)
	if sec == 0 {
		return appendZeroTime(b, usec, dec)
	}
	return time.Unix(sec, usec*1000).In(loc).AppendFormat(b, fracTimeLayouts[dec])
}

// appendTime2 is go-mysql's decodeTime2.
func appendTime2(b, d []byte, dec int) []byte {
	var tmp, intPart, frac int64
	switch dec {
	case 1, 2:
		intPart = be(d[:3]) - 0x800000
		frac = int64(d[3])
		if intPart < 0 && frac != 0 {
			// Negative values store the fraction reversed.
			intPart++
			frac -= 0x100
		}
		tmp = intPart<<24 + frac*10000
	case 3, 4:
		intPart = be(d[:3]) - 0x800000
		frac = int64(binary.BigEndian.Uint16(d[3:]))
		if intPart < 0 && frac != 0 {
			intPart++
			frac -= 0x10000
		}
		tmp = intPart<<24 + frac*100
	case 5, 6:
		return appendTimeOf(b, be(d[:6])-0x800000000000, dec)
	default:
		intPart = be(d[:3]) - 0x800000
		tmp = intPart << 24
	}
	if intPart == 0 && frac == 0 {
		return append(b, "00:00:00"...)
	}
	return appendTimeOf(b, tmp, dec)
}

// appendTimeOf is go-mysql's timeFormat.
func appendTimeOf(b []byte, tmp int64, dec int) []byte {
	if tmp < 0 {
		tmp = -tmp
		b = append(b, '-')
	}
	hms := tmp >> 24
	b = appendClock(b, (hms>>12)%(1<<10), (hms>>6)%(1<<6), hms%(1<<6))
	if secPart := tmp % (1 << 24); secPart != 0 {
		return appendFrac(b, secPart, dec)
	}
	return b
}
