package replication

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// The tests here build rows events byte by byte for a table of every
// column type the fast path decodes, parse them with go-mysql's own
// parser (so that the RowsEvent carries the syncer's options), and
// compare the fast path with go-mysql's Decode on each.

// hotCol is a column of the test table: its binlog type, table map
// metadata, and a generator of its values' bytes.
type hotCol struct {
	typ      byte
	meta     []byte
	unsigned bool
	gen      func(r *rand.Rand) []byte
}

func le(n int, x uint64) []byte {
	b := make([]byte, n)
	for i := range n {
		b[i] = byte(x >> (8 * i))
	}
	return b
}

func beBytes(n int, x uint64) []byte {
	b := make([]byte, n)
	for i := range n {
		b[n-1-i] = byte(x >> (8 * i))
	}
	return b
}

// intBytes is n random bytes of an integer, often an extreme.
func intBytes(n int) func(r *rand.Rand) []byte {
	return func(r *rand.Rand) []byte {
		top := uint64(1)<<(8*n-1) - 1
		if n == 8 {
			top = math.MaxInt64
		}
		switch r.IntN(6) {
		case 0:
			return le(n, 0)
		case 1:
			return le(n, top) // signed max
		case 2:
			return le(n, top+1) // signed min, or unsigned 2^(w-1)
		case 3:
			return le(n, math.MaxUint64) // -1, unsigned max
		}
		return le(n, r.Uint64())
	}
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// strBytes is a string of at most max bytes with an h-byte length.
func strBytes(h, maxLen int) func(r *rand.Rand) []byte {
	return func(r *rand.Rand) []byte {
		n := r.IntN(maxLen + 1)
		if r.IntN(4) == 0 {
			n = maxLen
		}
		if r.IntN(5) == 0 {
			n = 0
		}
		return append(le(h, uint64(n)), randBytes(r, n)...)
	}
}

// decimalBytes is a DECIMAL(prec, scale) in MySQL's binary form.
func decimalBytes(prec, scale int) func(r *rand.Rand) []byte {
	return func(r *rand.Rand) []byte {
		var b []byte
		part := func(digits int) {
			for ; digits >= 9; digits -= 9 {
				b = append(b, beBytes(4, uint64(r.IntN(1e9)))...)
			}
			if digits > 0 {
				pow := 1
				for range digits {
					pow *= 10
				}
				b = append(b, beBytes(compressedBytes[digits], uint64(r.IntN(pow)))...)
			}
		}
		intg := prec - scale
		// The leading part first: MySQL stores the short group first.
		lead := intg % 9
		if lead > 0 {
			part(lead)
		}
		part(intg - lead)
		part(scale)
		if r.IntN(5) == 0 {
			clear(b) // zero
		}
		if r.IntN(2) == 0 { // negative
			for i := range b {
				b[i] = ^b[i]
			}
		}
		b[0] ^= 0x80
		return b
	}
}

// temporalBytes is n bytes of a temporal value: random, zero, or the
// encoding's zero point.
func temporalBytes(n int, zero []byte) func(r *rand.Rand) []byte {
	return func(r *rand.Rand) []byte {
		switch r.IntN(5) {
		case 0:
			return make([]byte, n)
		case 1:
			b := make([]byte, n)
			copy(b, zero)
			return b
		}
		return randBytes(r, n)
	}
}

func datetime2Bytes(dec int) func(r *rand.Rand) []byte {
	n := 5 + (dec+1)/2
	return func(r *rand.Rand) []byte {
		if r.IntN(2) == 0 {
			return temporalBytes(n, []byte{0x80})(r)
		}
		y, m, d := 1000+r.IntN(9000), 1+r.IntN(12), 1+r.IntN(28)
		hms := r.IntN(24)<<12 | r.IntN(60)<<6 | r.IntN(60)
		v := uint64(((y*13+m)<<5|d)<<17|hms) + 0x8000000000
		b := beBytes(5, v)
		switch dec {
		case 1, 2:
			b = append(b, byte(r.IntN(100)))
		case 3, 4:
			b = append(b, beBytes(2, uint64(r.IntN(10000)))...)
		case 5, 6:
			b = append(b, beBytes(3, uint64(r.IntN(1e6)))...)
		}
		return b
	}
}

// hotTable is a table of every type the fast path decodes.
var hotTable = []hotCol{
	{typ: gomysql.MYSQL_TYPE_TINY, gen: intBytes(1)},
	{typ: gomysql.MYSQL_TYPE_TINY, unsigned: true, gen: intBytes(1)},
	{typ: gomysql.MYSQL_TYPE_SHORT, gen: intBytes(2)},
	{typ: gomysql.MYSQL_TYPE_SHORT, unsigned: true, gen: intBytes(2)},
	{typ: gomysql.MYSQL_TYPE_INT24, gen: intBytes(3)},
	{typ: gomysql.MYSQL_TYPE_INT24, unsigned: true, gen: intBytes(3)},
	{typ: gomysql.MYSQL_TYPE_LONG, gen: intBytes(4)},
	{typ: gomysql.MYSQL_TYPE_LONG, unsigned: true, gen: intBytes(4)},
	{typ: gomysql.MYSQL_TYPE_LONGLONG, gen: intBytes(8)},
	{typ: gomysql.MYSQL_TYPE_LONGLONG, unsigned: true, gen: intBytes(8)},
	{typ: gomysql.MYSQL_TYPE_YEAR, gen: intBytes(1)},
	{typ: gomysql.MYSQL_TYPE_NEWDECIMAL, meta: []byte{30, 10}, gen: decimalBytes(30, 10)},
	{typ: gomysql.MYSQL_TYPE_NEWDECIMAL, meta: []byte{5, 0}, unsigned: true, gen: decimalBytes(5, 0)},
	{typ: gomysql.MYSQL_TYPE_FLOAT, meta: []byte{4}, gen: intBytes(4)},
	{typ: gomysql.MYSQL_TYPE_DOUBLE, meta: []byte{8}, gen: intBytes(8)},
	{typ: gomysql.MYSQL_TYPE_BIT, meta: []byte{1, 0}, gen: func(r *rand.Rand) []byte { return []byte{byte(r.IntN(2))} }},
	{typ: gomysql.MYSQL_TYPE_BIT, meta: []byte{0, 8}, gen: intBytes(8)},
	{typ: gomysql.MYSQL_TYPE_BIT, meta: []byte{3, 2}, gen: func(r *rand.Rand) []byte { return randBytes(r, 3) }}, // BIT(19)
	{typ: gomysql.MYSQL_TYPE_STRING, meta: []byte{gomysql.MYSQL_TYPE_ENUM, 1}, gen: intBytes(1)},
	{typ: gomysql.MYSQL_TYPE_STRING, meta: []byte{gomysql.MYSQL_TYPE_ENUM, 2}, gen: intBytes(2)},
	{typ: gomysql.MYSQL_TYPE_STRING, meta: []byte{gomysql.MYSQL_TYPE_SET, 1}, gen: intBytes(1)},
	{typ: gomysql.MYSQL_TYPE_STRING, meta: []byte{gomysql.MYSQL_TYPE_SET, 8}, gen: intBytes(8)},
	{typ: gomysql.MYSQL_TYPE_VARCHAR, meta: le(2, 200), gen: strBytes(1, 200)},
	{typ: gomysql.MYSQL_TYPE_VAR_STRING, meta: le(2, 1000), gen: strBytes(2, 1000)},
	{typ: gomysql.MYSQL_TYPE_STRING, meta: []byte{gomysql.MYSQL_TYPE_STRING, 40}, gen: strBytes(1, 40)},
	// CHAR(255) in utf8mb4: 1020 bytes, the length's high bits in the type.
	{typ: gomysql.MYSQL_TYPE_STRING, meta: []byte{0xce, 0xfc}, gen: strBytes(2, 1020)},
	{typ: gomysql.MYSQL_TYPE_BLOB, meta: []byte{1}, gen: strBytes(1, 255)},
	{typ: gomysql.MYSQL_TYPE_BLOB, meta: []byte{2}, gen: strBytes(2, 3000)},
	{typ: gomysql.MYSQL_TYPE_BLOB, meta: []byte{3}, gen: strBytes(3, 300)},
	{typ: gomysql.MYSQL_TYPE_BLOB, meta: []byte{4}, gen: strBytes(4, 300)},
	{typ: gomysql.MYSQL_TYPE_DATE, gen: temporalBytes(3, nil)},
	{typ: gomysql.MYSQL_TYPE_DATETIME2, meta: []byte{0}, gen: datetime2Bytes(0)},
	{typ: gomysql.MYSQL_TYPE_DATETIME2, meta: []byte{6}, gen: datetime2Bytes(6)},
	{typ: gomysql.MYSQL_TYPE_DATETIME2, meta: []byte{3}, gen: datetime2Bytes(3)},
	{typ: gomysql.MYSQL_TYPE_DATETIME2, meta: []byte{1}, gen: datetime2Bytes(1)},
	{typ: gomysql.MYSQL_TYPE_TIMESTAMP2, meta: []byte{0}, gen: temporalBytes(4, nil)},
	{typ: gomysql.MYSQL_TYPE_TIMESTAMP2, meta: []byte{6}, gen: temporalBytes(7, nil)},
	{typ: gomysql.MYSQL_TYPE_TIMESTAMP2, meta: []byte{2}, gen: temporalBytes(5, nil)},
	{typ: gomysql.MYSQL_TYPE_TIME2, meta: []byte{0}, gen: temporalBytes(3, []byte{0x80})},
	{typ: gomysql.MYSQL_TYPE_TIME2, meta: []byte{2}, gen: temporalBytes(4, []byte{0x80})},
	{typ: gomysql.MYSQL_TYPE_TIME2, meta: []byte{3}, gen: temporalBytes(5, []byte{0x80})},
	{typ: gomysql.MYSQL_TYPE_TIME2, meta: []byte{4}, gen: temporalBytes(5, []byte{0x7f, 0xff, 0xff})},
	{typ: gomysql.MYSQL_TYPE_TIME2, meta: []byte{6}, gen: temporalBytes(6, []byte{0x80})},
	{typ: gomysql.MYSQL_TYPE_NEWDECIMAL, meta: []byte{65, 30}, gen: decimalBytes(65, 30)},
	{typ: gomysql.MYSQL_TYPE_NEWDECIMAL, meta: []byte{18, 9}, gen: decimalBytes(18, 9)},
}

// binlogEvent is a binlog event of type typ with body.
func binlogEvent(typ replication.EventType, body []byte) []byte {
	h := make([]byte, replication.EventHeaderSize, replication.EventHeaderSize+len(body))
	binary.LittleEndian.PutUint32(h[0:], 1) // timestamp
	h[4] = byte(typ)
	binary.LittleEndian.PutUint32(h[5:], 1) // server id
	binary.LittleEndian.PutUint32(h[9:], uint32(replication.EventHeaderSize+len(body)))
	return append(h, body...)
}

// rowsTemplate parses a format description, the table map of cols and
// an empty rows event of type typ with go-mysql's parser, and returns
// the rows event before decoding: copies of it decode bodies for that
// table.
func rowsTemplate(t testing.TB, cols []hotCol, typ replication.EventType) replication.RowsEvent {
	t.Helper()
	p := replication.NewBinlogParser()
	p.SetTimestampStringLocation(syncerLocation)
	p.SetRenderJSONAsMySQLText(true)
	var tmpl *replication.RowsEvent
	p.SetRowsEventDecodeFunc(func(e *replication.RowsEvent, _ []byte) error {
		tmpl = e
		return nil
	})
	fde := make([]byte, 2+50+4+1)
	binary.LittleEndian.PutUint16(fde, 4)
	copy(fde[2:], "5.0.0-shepherd-test") // before checksums: no trailer
	fde[56] = replication.EventHeaderSize
	fde = append(fde, bytes.Repeat([]byte{10}, 256)...) // 6-byte table ids
	var types, meta, sign []byte
	numeric := 0
	for _, c := range cols {
		types = append(types, c.typ)
		meta = append(meta, c.meta...)
		switch c.typ {
		case gomysql.MYSQL_TYPE_TINY, gomysql.MYSQL_TYPE_SHORT, gomysql.MYSQL_TYPE_INT24, gomysql.MYSQL_TYPE_LONG,
			gomysql.MYSQL_TYPE_LONGLONG, gomysql.MYSQL_TYPE_NEWDECIMAL, gomysql.MYSQL_TYPE_FLOAT,
			gomysql.MYSQL_TYPE_DOUBLE, gomysql.MYSQL_TYPE_YEAR:
			if numeric%8 == 0 {
				sign = append(sign, 0)
			}
			if c.unsigned {
				sign[numeric/8] |= 0x80 >> (numeric % 8)
			}
			numeric++
		}
	}
	tm := append(le(6, 1), 0, 0)
	tm = append(tm, 2, 'd', 'b', 0, 1, 't', 0, byte(len(cols)))
	tm = append(tm, types...)
	tm = append(tm, byte(len(meta)))
	tm = append(tm, meta...)
	tm = append(tm, bytes.Repeat([]byte{0xff}, (len(cols)+7)/8)...)
	tm = append(tm, 1, byte(len(sign))) // TABLE_MAP_OPT_META_SIGNEDNESS
	tm = append(tm, sign...)
	for _, ev := range [][]byte{
		binlogEvent(replication.FORMAT_DESCRIPTION_EVENT, fde),
		binlogEvent(replication.TABLE_MAP_EVENT, tm),
		binlogEvent(typ, rowsHeader(typ, len(cols), nil)),
	} {
		if _, err := p.Parse(ev); err != nil {
			t.Fatalf("parse a test event: %v", err)
		}
	}
	if tmpl == nil {
		t.Fatalf("the parser gave no rows event of type %v", typ)
	}
	return *tmpl
}

func isV2(typ replication.EventType) bool {
	return typ >= replication.WRITE_ROWS_EVENTv2 && typ <= replication.DELETE_ROWS_EVENTv2
}

func isUpdate(typ replication.EventType) bool {
	return typ == replication.UPDATE_ROWS_EVENTv1 || typ == replication.UPDATE_ROWS_EVENTv2
}

// rowsHeader is a rows event body's header for table 1 of n columns,
// with bitmaps from bm (all columns where bm is short).
func rowsHeader(typ replication.EventType, n int, bm []byte) []byte {
	b := append(le(6, 1), 0, 0)
	if isV2(typ) {
		b = append(b, 2, 0)
	}
	b = append(b, byte(n))
	size := (n + 7) / 8
	images := 1
	if isUpdate(typ) {
		images = 2
	}
	for k := range images {
		for i := range size {
			x := byte(0xff)
			if j := k*size + i; j < len(bm) {
				x = bm[j]
			}
			b = append(b, x)
		}
	}
	return b
}

var rowsEventTypes = []replication.EventType{
	replication.WRITE_ROWS_EVENTv2, replication.UPDATE_ROWS_EVENTv2, replication.DELETE_ROWS_EVENTv2,
	replication.WRITE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv1,
}

// randomRows is the rows of a random rows event body: images with the
// given bitmaps, NULLs, values from the columns' generators.
func randomRows(r *rand.Rand, cols []hotCol, typ replication.EventType, bm []byte, rows int) []byte {
	size := (len(cols) + 7) / 8
	bitmaps := [][]byte{bm[:size]}
	if isUpdate(typ) {
		bitmaps = append(bitmaps, bm[size:2*size])
	}
	var b []byte
	for range rows {
		for _, bitmap := range bitmaps {
			var present []int
			for i := range cols {
				if bitmap[i/8]&(1<<(i%8)) != 0 {
					present = append(present, i)
				}
			}
			nulls := make([]byte, (len(present)+7)/8)
			var vals []byte
			for j, i := range present {
				if r.IntN(6) == 0 {
					nulls[j/8] |= 1 << (j % 8)
					continue
				}
				vals = append(vals, cols[i].gen(r)...)
			}
			b = append(append(b, nulls...), vals...)
		}
	}
	return b
}

// randomBitmaps is full images, or now and then partial ones.
func randomBitmaps(r *rand.Rand, n int) []byte {
	bm := bytes.Repeat([]byte{0xff}, 2*((n+7)/8))
	if r.IntN(4) == 0 {
		for i := range bm {
			bm[i] = byte(r.Uint32())
		}
	}
	return bm
}

// decodeBoth decodes body with the fast path and, if it takes it, with
// go-mysql, each on its own copy of tmpl, and says how they differ (""
// if they do not). ours says whether the fast path took the event.
// (go-mysql is not run on the rest: some bodies, of rows of no bytes,
// keep it decoding forever.)
func decodeBoth(tmpl *replication.RowsEvent, body []byte) (ours bool, diff string) {
	ref, fast := *tmpl, *tmpl
	d := newRowDecoder(syncerLocation)
	if !d.fast(&fast, body) {
		return false, ""
	}
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
			}
		}()
		return ref.Decode(body)
	}()
	if err != nil {
		return true, fmt.Sprintf("go-mysql fails (%v) where the fast path decodes %d rows", err, len(fast.Rows))
	}
	return true, diffRows(ref.Rows, fast.Rows, ref.SkippedColumns, fast.SkippedColumns)
}

// diffRows compares rows by type and content ("" if the same).
func diffRows(want, got [][]any, wantSkip, gotSkip [][]int) string {
	if len(want) != len(got) || (want == nil) != (got == nil) {
		return fmt.Sprintf("%d rows (nil %v), want %d (nil %v)", len(got), got == nil, len(want), want == nil)
	}
	if !reflect.DeepEqual(wantSkip, gotSkip) {
		return fmt.Sprintf("skipped columns %v, want %v", gotSkip, wantSkip)
	}
	for i := range want {
		if len(want[i]) != len(got[i]) {
			return fmt.Sprintf("row %d: %d values, want %d", i, len(got[i]), len(want[i]))
		}
		for j := range want[i] {
			if !sameValue(want[i][j], got[i][j]) {
				return fmt.Sprintf("row %d column %d: %T %#v, want %T %#v", i, j, got[i][j], got[i][j], want[i][j], want[i][j])
			}
		}
	}
	return ""
}

func sameValue(x, y any) bool {
	if reflect.TypeOf(x) != reflect.TypeOf(y) {
		return false
	}
	switch a := x.(type) {
	case float32:
		return math.Float32bits(a) == math.Float32bits(y.(float32))
	case float64:
		return math.Float64bits(a) == math.Float64bits(y.(float64))
	case []byte:
		return bytes.Equal(a, y.([]byte))
	}
	return reflect.DeepEqual(x, y)
}

// TestRowDecodeMatchesGoMySQL decodes seeded random events of every row
// event type with both decoders: full and partial images, NULLs, extreme
// integers, long strings, zero and fractional temporal values, negative
// decimals, and bodies cut short or with a byte changed (which either
// decoder may refuse, but the fast path must not decode differently).
func TestRowDecodeMatchesGoMySQL(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 2026))
	for _, typ := range rowsEventTypes {
		tmpl := rowsTemplate(t, hotTable, typ)
		taken := 0
		for i := range 300 {
			bm := randomBitmaps(r, len(hotTable))
			body := append(rowsHeader(typ, len(hotTable), bm), randomRows(r, hotTable, typ, bm, 1+r.IntN(20))...)
			mutated := false
			switch r.IntN(10) {
			case 0:
				body, mutated = body[:r.IntN(len(body))], true
			case 1:
				body[r.IntN(len(body))] ^= byte(1 + r.IntN(255))
				mutated = true
			}
			ours, diff := decodeBoth(&tmpl, body)
			if diff != "" {
				t.Fatalf("%v event %d: %s", typ, i, diff)
			}
			if ours {
				taken++
			} else if !mutated {
				t.Fatalf("%v event %d: the fast path declined a well-formed event", typ, i)
			}
		}
		if taken < 200 {
			t.Errorf("%v: the fast path took %d of 300 events", typ, taken)
		}
	}
}

// TestRowDecodeDeclines checks that what the fast path does not handle
// is left to go-mysql: other column types, unknown metadata, options
// other than the syncer's.
func TestRowDecodeDeclines(t *testing.T) {
	cases := []struct {
		name string
		cols []hotCol
	}{
		{"MySQL JSON", []hotCol{{typ: gomysql.MYSQL_TYPE_JSON, meta: []byte{4}}}},
		{"GEOMETRY", []hotCol{{typ: gomysql.MYSQL_TYPE_GEOMETRY, meta: []byte{4}}}},
		{"old DATETIME", []hotCol{{typ: gomysql.MYSQL_TYPE_DATETIME}}},
		{"old TIMESTAMP", []hotCol{{typ: gomysql.MYSQL_TYPE_TIMESTAMP}}},
		{"old TIME", []hotCol{{typ: gomysql.MYSQL_TYPE_TIME}}},
		{"DATETIME2(7)", []hotCol{{typ: gomysql.MYSQL_TYPE_DATETIME2, meta: []byte{7}}}},
		{"BLOB of 5-byte lengths", []hotCol{{typ: gomysql.MYSQL_TYPE_BLOB, meta: []byte{5}}}},
		{"ENUM of 3 bytes", []hotCol{{typ: gomysql.MYSQL_TYPE_STRING, meta: []byte{gomysql.MYSQL_TYPE_ENUM, 3}}}},
		{"DECIMAL(66,0)", []hotCol{{typ: gomysql.MYSQL_TYPE_NEWDECIMAL, meta: []byte{66, 0}}}},
		{"an INT then a JSON", []hotCol{{typ: gomysql.MYSQL_TYPE_LONG}, {typ: gomysql.MYSQL_TYPE_JSON, meta: []byte{4}}}},
	}
	for _, c := range cases {
		tmpl := rowsTemplate(t, c.cols, replication.WRITE_ROWS_EVENTv2)
		body := append(rowsHeader(replication.WRITE_ROWS_EVENTv2, len(c.cols), nil), make([]byte, 16)...)
		if newRowDecoder(syncerLocation).fast(&tmpl, body) {
			t.Errorf("%s: the fast path decoded it", c.name)
		}
	}
	// Another TimestampStringLocation than the decoder's.
	tmpl := rowsTemplate(t, hotTable[:1], replication.WRITE_ROWS_EVENTv2)
	body := append(rowsHeader(replication.WRITE_ROWS_EVENTv2, 1, nil), 0, 7)
	if newRowDecoder(time.Local).fast(&tmpl, body) && time.Local != syncerLocation {
		t.Errorf("the fast path decoded an event for another time zone")
	}
	if !newRowDecoder(syncerLocation).fast(&tmpl, body) {
		t.Errorf("the fast path declined a TINYINT row")
	}
}

// TestBoxAt checks that values boxed in slabs are what the runtime's
// boxing makes, and cost no allocation each.
func TestBoxAt(t *testing.T) {
	var st rowState
	st.perRow[bInt32] = 100
	vals := []any{int16(-5), uint16(65535), int32(-1 << 31), uint32(1 << 31), int64(math.MinInt64),
		uint64(math.MaxUint64), 2155, float32(1.5), math.Inf(-1), "str", "", []byte{1, 2}, []byte{}}
	for _, v := range vals {
		var got any
		switch x := v.(type) {
		case int16:
			got = box(&st.slabs.i16, 4, x)
		case uint16:
			got = box(&st.slabs.u16, 4, x)
		case int32:
			got = box(&st.slabs.i32, 4, x)
		case uint32:
			got = box(&st.slabs.u32, 4, x)
		case int64:
			got = box(&st.slabs.i64, 4, x)
		case uint64:
			got = box(&st.slabs.u64, 4, x)
		case int:
			got = box(&st.slabs.ints, 4, x)
		case float32:
			got = box(&st.slabs.f32, 4, x)
		case float64:
			got = box(&st.slabs.f64, 4, x)
		case string:
			got = box(&st.slabs.strs, 4, x)
		case []byte:
			got = box(&st.slabs.bs, 4, x)
		}
		if !sameValue(got, v) || fmt.Sprintf("%T %v", got, got) != fmt.Sprintf("%T %v", v, v) {
			t.Errorf("boxed %T %v as %T %v", v, v, got, got)
		}
		if _, ok := v.([]byte); !ok && got != v {
			t.Errorf("boxed %T %v compares unequal to itself", v, v)
		}
	}
	slab := make([]int32, 1000)
	allocs := testing.AllocsPerRun(100, func() {
		s := slab
		for i := range 10 {
			_ = box(&s, 1, int32(1000+i))
		}
	})
	if allocs != 0 {
		t.Errorf("boxing into a slab allocates %v times per 10 values", allocs)
	}
}

// sbtestEvent is a write event of rows rows of sysbench's table (INT,
// INT, CHAR(120), CHAR(60)), as BenchmarkApply's insert workload logs.
func sbtestEvent(t testing.TB, rows int) (replication.RowsEvent, []byte) {
	cols := []hotCol{
		{typ: gomysql.MYSQL_TYPE_LONG},
		{typ: gomysql.MYSQL_TYPE_LONG},
		{typ: gomysql.MYSQL_TYPE_STRING, meta: []byte{gomysql.MYSQL_TYPE_STRING, 120}},
		{typ: gomysql.MYSQL_TYPE_STRING, meta: []byte{gomysql.MYSQL_TYPE_STRING, 240}},
	}
	tmpl := rowsTemplate(t, cols, replication.WRITE_ROWS_EVENTv2)
	body := rowsHeader(replication.WRITE_ROWS_EVENTv2, len(cols), nil)
	for i := range rows {
		body = append(body, 0)
		body = append(body, le(4, uint64(1000+i))...)
		body = append(body, le(4, uint64(50000+i))...)
		body = append(body, 119)
		body = append(body, bytes.Repeat([]byte{'7'}, 119)...)
		body = append(body, 59)
		body = append(body, bytes.Repeat([]byte{'3'}, 59)...)
	}
	return tmpl, body
}

// TestRowDecodeAllocs holds the fast path to a few allocations per event
// where go-mysql makes several per row.
func TestRowDecodeAllocs(t *testing.T) {
	tmpl, body := sbtestEvent(t, 100)
	d := newRowDecoder(syncerLocation)
	ours := testing.AllocsPerRun(20, func() {
		e := tmpl
		if !d.fast(&e, body) {
			t.Fatal("the fast path declined the event")
		}
	})
	theirs := testing.AllocsPerRun(20, func() {
		e := tmpl
		if err := e.Decode(body); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("allocations per 100-row event: fast path %v, go-mysql %v", ours, theirs)
	if ours > 20 {
		t.Errorf("the fast path allocates %v times for 100 rows, want at most 20", ours)
	}
}

// BenchmarkRowDecode decodes a 100-row event of sysbench's table with
// each decoder.
func BenchmarkRowDecode(b *testing.B) {
	tmpl, body := sbtestEvent(b, 100)
	b.Run("fast", func(b *testing.B) {
		d := newRowDecoder(syncerLocation)
		b.ReportAllocs()
		for b.Loop() {
			e := tmpl
			if !d.fast(&e, body) {
				b.Fatal("declined")
			}
		}
	})
	b.Run("go-mysql", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			e := tmpl
			if err := e.Decode(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzRowDecode feeds bodies for the table of every hot type: a rows
// event type (kind), the column bitmaps and the rows, or with kind's high
// bit a whole body. The fast path must not panic, and whenever it decodes
// an event go-mysql must decode it to the same rows.
func FuzzRowDecode(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 30))
	for k, typ := range rowsEventTypes {
		bm := randomBitmaps(r, len(hotTable))
		f.Add(byte(k), bm, randomRows(r, hotTable, typ, bm, 2))
	}
	tmpls := make([]replication.RowsEvent, len(rowsEventTypes))
	for k, typ := range rowsEventTypes {
		tmpls[k] = rowsTemplate(f, hotTable, typ)
	}
	f.Fuzz(func(t *testing.T, kind byte, bitmaps, rows []byte) {
		k := int(kind&0x7f) % len(rowsEventTypes)
		body := rows
		if kind&0x80 == 0 {
			body = append(rowsHeader(rowsEventTypes[k], len(hotTable), bitmaps), rows...)
		}
		if _, diff := decodeBoth(&tmpls[k], body); diff != "" {
			t.Fatal(diff)
		}
	})
}
