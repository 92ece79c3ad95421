// Package changeevent renders a task's row changes and schema changes as
// events, for the sinks that publish them (natssink, kafkasink): the
// columns of a table map, each value as JSON, and the Debezium-style
// envelope (before, after, source, op, ts_ms). Everything here is a pure
// function of the segment, no I/O, so that the same transaction read
// again after a crash gives the same bytes; a sink adds only where an
// event goes and how it is sent.
package changeevent

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	binlog "github.com/go-mysql-org/go-mysql/replication"
	"github.com/pingcap/tidb/pkg/parser/charset"
	"github.com/shopspring/decimal"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/encoding/unicode/utf32"

	"github.com/shepherd-dev/shepherd/replication"
)

// Operations of an event, as the envelope's "op" names them.
const (
	OpCreate = "c"
	OpUpdate = "u"
	OpDelete = "d"
)

// EnvelopeVersion is the "version" of the envelope's source block.
const EnvelopeVersion = 1

// ErrNoColumnNames reports a row event without column names: the source
// does not log them (binlog_row_metadata is not FULL), and an event
// without them cannot be named field by field. It wraps
// replication.ErrSourceConfig.
var ErrNoColumnNames = fmt.Errorf("changeevent: the source logs no column names: set binlog_row_metadata=FULL on it (SET GLOBAL binlog_row_metadata=FULL, and in its configuration file) (%w)", replication.ErrSourceConfig)

// Source is what the "source" block says of the transaction.
type Source struct {
	Task      string
	Server    string // the source server's identity, Position.Server
	DB, Table string // source names; empty for a schema change
	File      string // the transaction's start position
	Pos       uint32
	GTID      string // the transaction's GTID, "" without one
	TSMS      int64  // source commit time
	Row       int    // the event's index in its transaction
}

// NewSource is the source block of the events of segment seg of task.
func NewSource(task string, seg *replication.Segment) Source {
	src := Source{Task: task, Server: seg.Start.Server, File: seg.Start.File, Pos: seg.Start.Pos, GTID: seg.GTID, TSMS: int64(seg.TS) * 1000}
	if src.Server == "" {
		src.Server = seg.End.Server
	}
	return src
}

// Position is the transaction's start as file:pos, for messages.
func (s *Source) Position() string {
	return s.File + ":" + strconv.FormatUint(uint64(s.Pos), 10)
}

// AppendSource writes the "source" block.
func AppendSource(b []byte, s *Source) []byte {
	connector := s.Server
	if i := strings.IndexByte(connector, ':'); i >= 0 {
		connector = connector[:i]
	}
	b = append(b, `"source":{"version":`...)
	b = strconv.AppendInt(b, EnvelopeVersion, 10)
	b = append(b, `,"connector":`...)
	b = AppendJSONString(b, connector)
	b = append(b, `,"name":`...)
	b = AppendJSONString(b, s.Task)
	b = append(b, `,"server":`...)
	b = AppendJSONString(b, s.Server)
	b = append(b, `,"ts_ms":`...)
	b = strconv.AppendInt(b, s.TSMS, 10)
	if s.DB != "" || s.Table != "" {
		b = append(b, `,"db":`...)
		b = AppendJSONString(b, s.DB)
		b = append(b, `,"table":`...)
		b = AppendJSONString(b, s.Table)
	}
	b = append(b, `,"file":`...)
	b = AppendJSONString(b, s.File)
	b = append(b, `,"pos":`...)
	b = strconv.AppendUint(b, uint64(s.Pos), 10)
	b = append(b, `,"gtid":`...)
	if s.GTID == "" {
		b = append(b, "null"...)
	} else {
		b = AppendJSONString(b, s.GTID)
	}
	b = append(b, `,"row":`...)
	b = strconv.AppendInt(b, int64(s.Row), 10)
	return append(b, '}')
}

// AppendRowEvent writes the envelope of one row change: before and after
// images (null where the operation has none), source, op and ts_ms (the
// source's commit time, not the time of publishing, so that a re-sent
// event is byte for byte the first one).
func AppendRowEvent(b []byte, tm *binlog.TableMapEvent, op string, before, after []any, src *Source) ([]byte, error) {
	cols, err := Columns(tm)
	if err != nil {
		return b, err
	}
	return AppendEnvelope(b, cols, op, before, after, src)
}

// AppendEnvelope is AppendRowEvent with the table's columns read
// already.
func AppendEnvelope(b []byte, cols []Column, op string, before, after []any, src *Source) ([]byte, error) {
	var err error
	b = append(b, `{"before":`...)
	if b, err = AppendImage(b, cols, before); err != nil {
		return b, err
	}
	b = append(b, `,"after":`...)
	if b, err = AppendImage(b, cols, after); err != nil {
		return b, err
	}
	b = append(b, ',')
	b = AppendSource(b, src)
	b = append(b, `,"op":`...)
	b = AppendJSONString(b, op)
	b = append(b, `,"ts_ms":`...)
	b = strconv.AppendInt(b, src.TSMS, 10)
	return append(b, '}'), nil
}

// AppendDDLEvent writes the envelope of a schema change: the statement
// as the source ran it, its default database there, and the statement
// with the task's routes applied (what a MySQL target would run).
func AppendDDLEvent(b []byte, schema, query, routed string, src *Source) []byte {
	b = append(b, `{"ddl":`...)
	b = AppendJSONString(b, query)
	b = append(b, `,"routed":`...)
	b = AppendJSONString(b, routed)
	b = append(b, `,"databaseName":`...)
	b = AppendJSONString(b, schema)
	b = append(b, ',')
	b = AppendSource(b, src)
	b = append(b, `,"op":"ddl","ts_ms":`...)
	b = strconv.AppendInt(b, src.TSMS, 10)
	return append(b, '}')
}

// Column is what the envelope needs of one column, from the table map.
type Column struct {
	Name     string
	Type     byte   // the real type: ENUM and SET told apart from STRING
	Meta     uint16 // the table map's metadata of the column (lengths, precision)
	Unsigned bool
	Charset  string // of a character column; "binary" for binary strings and BLOBs
	Labels   []string
}

// Columns reads the columns of a table map logged with
// binlog_row_metadata=FULL.
func Columns(tm *binlog.TableMapEvent) ([]Column, error) {
	names := tm.ColumnNameString()
	if len(names) != int(tm.ColumnCount) {
		return nil, fmt.Errorf("table %s.%s: %w", tm.Schema, tm.Table, ErrNoColumnNames)
	}
	unsigned := tm.UnsignedMap()
	collations := tm.CollationMap()
	enums, sets := tm.EnumStrValueMap(), tm.SetStrValueMap()
	cols := make([]Column, len(names))
	for i, n := range names {
		c := Column{Name: n, Type: realType(tm, i), Meta: tm.ColumnMeta[i], Unsigned: unsigned[i]}
		switch {
		case tm.IsEnumColumn(i):
			c.Labels = enums[i]
			if c.Labels == nil {
				return nil, fmt.Errorf("table %s.%s column %s: ENUM without its labels: %w", tm.Schema, tm.Table, n, ErrNoColumnNames)
			}
		case tm.IsSetColumn(i):
			c.Labels = sets[i]
		case tm.IsCharacterColumn(i):
			id, ok := collations[i]
			if !ok {
				// Geometry (MariaDB counts it as character) has no
				// collation: its bytes are WKB.
				c.Charset = "binary"
				break
			}
			cs, err := charsetOf(id)
			if err != nil {
				return nil, fmt.Errorf("table %s.%s column %s: %w", tm.Schema, tm.Table, n, err)
			}
			c.Charset = cs
		case c.Type == gomysql.MYSQL_TYPE_GEOMETRY:
			c.Charset = "binary"
		}
		cols[i] = c
	}
	return cols, nil
}

// realType is the column's type with ENUM and SET (logged as STRING with
// the real type in the metadata) told apart.
func realType(tm *binlog.TableMapEvent, i int) byte {
	t := tm.ColumnType[i]
	if t == gomysql.MYSQL_TYPE_STRING {
		if rt := byte(tm.ColumnMeta[i] >> 8); rt == gomysql.MYSQL_TYPE_ENUM || rt == gomysql.MYSQL_TYPE_SET {
			return rt
		}
	}
	return t
}

// charsetOf names the character set of a collation id.
func charsetOf(id uint64) (string, error) {
	if id == 63 {
		return "binary", nil
	}
	c, err := charset.GetCollationByID(int(id))
	if err != nil || c == nil {
		return "", fmt.Errorf("unknown collation id %d", id)
	}
	return c.CharsetName, nil
}

// decoders turn a character set's bytes into UTF-8. utf8, utf8mb3,
// utf8mb4 and ascii need none; binary is written as base64.
var decoders = map[string]encoding.Encoding{
	"latin1":  charmap.Windows1252, // MySQL's latin1 is cp1252
	"latin2":  charmap.ISO8859_2,
	"cp1250":  charmap.Windows1250,
	"cp1251":  charmap.Windows1251,
	"cp1256":  charmap.Windows1256,
	"cp1257":  charmap.Windows1257,
	"koi8r":   charmap.KOI8R,
	"koi8u":   charmap.KOI8U,
	"greek":   charmap.ISO8859_7,
	"hebrew":  charmap.ISO8859_8,
	"latin5":  charmap.ISO8859_9,
	"latin7":  charmap.ISO8859_13,
	"cp850":   charmap.CodePage850,
	"cp866":   charmap.CodePage866,
	"gbk":     simplifiedchinese.GBK,
	"gb2312":  simplifiedchinese.HZGB2312,
	"gb18030": simplifiedchinese.GB18030,
	"big5":    traditionalchinese.Big5,
	"sjis":    japanese.ShiftJIS,
	"cp932":   japanese.ShiftJIS,
	"ujis":    japanese.EUCJP,
	"eucjpms": japanese.EUCJP,
	"euckr":   korean.EUCKR,
	"utf16":   unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM),
	"ucs2":    unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM),
	"utf16le": unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM),
	"utf32":   utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM),
}

func init() {
	// gb2312 is EUC-CN, a subset of GBK; HZ is another encoding.
	decoders["gb2312"] = simplifiedchinese.GBK
}

// AppendImage writes a row image as an object of Column name to value,
// in Column order, or null for none.
func AppendImage(b []byte, cols []Column, row []any) ([]byte, error) {
	if row == nil {
		return append(b, "null"...), nil
	}
	if len(row) != len(cols) {
		return b, fmt.Errorf("row image has %d values for %d columns", len(row), len(cols))
	}
	b = append(b, '{')
	var err error
	for i := range cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSONString(b, cols[i].Name)
		b = append(b, ':')
		if b, err = AppendValue(b, &cols[i], row[i]); err != nil {
			return b, fmt.Errorf("column %s: %w", cols[i].Name, err)
		}
	}
	return append(b, '}'), nil
}

// AppendValue writes one value as JSON:
//   - integers as numbers, unsigned columns reinterpreted at their width;
//     BIT as an unsigned number; YEAR as a number;
//   - FLOAT and DOUBLE as the shortest decimal that reads back the same
//     (FLOAT at single precision);
//   - DECIMAL as a string holding the exact decimal text;
//   - temporal values as the strings the binlog decoder formats
//     ("2026-11-22 12:34:56.5", TIMESTAMP in UTC, TIME "-838:59:59");
//   - character strings converted from their column's character set to
//     UTF-8; binary strings, BLOBs and geometry as base64;
//   - JSON as its text, a string; ENUM as its label, SET as its labels
//     joined by commas (as MySQL shows them).
func AppendValue(b []byte, c *Column, v any) ([]byte, error) {
	if v == nil {
		return append(b, "null"...), nil
	}
	switch c.Type {
	case gomysql.MYSQL_TYPE_ENUM, gomysql.MYSQL_TYPE_SET:
		text, err := replication.EnumSetText(v, c.Labels, c.Type == gomysql.MYSQL_TYPE_SET)
		if err != nil {
			return b, fmt.Errorf("%w (labels of the table map)", err)
		}
		return AppendJSONString(b, text), nil
	case gomysql.MYSQL_TYPE_BIT:
		n, ok := replication.IntValue(v)
		if !ok {
			return b, fmt.Errorf("BIT value of type %T", v)
		}
		return strconv.AppendUint(b, uint64(n), 10), nil
	case gomysql.MYSQL_TYPE_NEWDECIMAL, gomysql.MYSQL_TYPE_DECIMAL:
		switch x := v.(type) {
		case string:
			return AppendJSONString(b, x), nil
		case decimal.Decimal:
			return AppendJSONString(b, x.String()), nil
		}
		return b, fmt.Errorf("DECIMAL value of type %T", v)
	}
	switch x := v.(type) {
	case int8:
		if c.Unsigned {
			return strconv.AppendUint(b, uint64(uint8(x)), 10), nil
		}
		return strconv.AppendInt(b, int64(x), 10), nil
	case int16:
		if c.Unsigned {
			return strconv.AppendUint(b, uint64(uint16(x)), 10), nil
		}
		return strconv.AppendInt(b, int64(x), 10), nil
	case int32:
		if c.Unsigned {
			u := uint32(x)
			if c.Type == gomysql.MYSQL_TYPE_INT24 {
				u &= 1<<24 - 1 // decoded from 3 bytes, sign-extended
			}
			return strconv.AppendUint(b, uint64(u), 10), nil
		}
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		if c.Unsigned {
			return strconv.AppendUint(b, uint64(x), 10), nil
		}
		return strconv.AppendInt(b, x, 10), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case uint8, uint16, uint32, uint64:
		n, _ := replication.IntValue(x)
		return strconv.AppendUint(b, uint64(n), 10), nil
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return b, fmt.Errorf("%v has no JSON number", x)
		}
		return strconv.AppendFloat(b, float64(x), 'g', -1, 32), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return b, fmt.Errorf("%v has no JSON number", x)
		}
		return strconv.AppendFloat(b, x, 'g', -1, 64), nil
	case decimal.Decimal:
		return AppendJSONString(b, x.String()), nil
	case time.Time:
		return AppendJSONString(b, x.UTC().Format("2006-01-02 15:04:05.999999")), nil
	case string:
		return appendText(b, c, x)
	case []byte:
		return appendText(b, c, string(x))
	}
	return b, fmt.Errorf("cannot write a value of type %T (partial JSON updates need binlog_row_value_options='')", v)
}

// appendText writes a value that arrived as text or bytes.
func appendText(b []byte, c *Column, s string) ([]byte, error) {
	switch c.Charset {
	case "":
		// Not a character column: temporal text, MySQL's JSON text.
		if !utf8.ValidString(s) {
			return b, errors.New("text of a non-character Column is not UTF-8")
		}
		return AppendJSONString(b, s), nil
	case "binary":
		return AppendJSONString(b, base64.StdEncoding.EncodeToString([]byte(s))), nil
	case "utf8", "utf8mb3", "utf8mb4", "ascii":
		if !utf8.ValidString(s) {
			return b, fmt.Errorf("%s bytes %q are not valid UTF-8", c.Charset, s)
		}
		return AppendJSONString(b, s), nil
	}
	enc, ok := decoders[c.Charset]
	if !ok {
		return b, fmt.Errorf("character set %s cannot be converted to UTF-8 (supported: utf8mb4, utf8mb3, ascii, latin1, gbk, utf16 and others: see docs/replication.md)", c.Charset)
	}
	u, err := enc.NewDecoder().String(s)
	if err != nil {
		return b, fmt.Errorf("%s bytes %q: %w", c.Charset, s, err)
	}
	return AppendJSONString(b, u), nil
}

// AppendJSONString writes s, which must be valid UTF-8, as a JSON string.
// Only what JSON requires is escaped (quote, backslash, controls), plus
// U+2028 and U+2029 for JavaScript readers; everything else is kept as is,
// so the output is stable across Go versions.
func AppendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// EachRow calls fn with every row change of c, in order: the operation
// and the before and after images (nil where the operation has none).
func EachRow(c *replication.Change, fn func(op string, before, after []any) error) error {
	step, op := 1, OpCreate
	switch c.Kind {
	case replication.ChangeUpdate:
		step, op = 2, OpUpdate
	case replication.ChangeDelete:
		op = OpDelete
	}
	for i := 0; i+step <= len(c.Rows); i += step {
		var before, after []any
		switch c.Kind {
		case replication.ChangeInsert:
			after = c.Rows[i]
		case replication.ChangeDelete:
			before = c.Rows[i]
		default:
			before, after = c.Rows[i], c.Rows[i+1]
		}
		if err := fn(op, before, after); err != nil {
			return err
		}
	}
	return nil
}

// RowError is the error of rendering a row of table db.table in the
// source transaction src: non-retryable, since the same row renders the
// same way on every attempt.
func RowError(db, table string, src *Source, err error) error {
	if errors.Is(err, replication.ErrNonRetryable) {
		return fmt.Errorf("table %s.%s, source transaction at %s: %w", db, table, src.Position(), err)
	}
	return fmt.Errorf("%w: table %s.%s, source transaction at %s: %w", replication.ErrNonRetryable, db, table, src.Position(), err)
}
