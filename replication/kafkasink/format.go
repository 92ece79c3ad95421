package kafkasink

import (
	"bytes"
	"strconv"
	"strings"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/shepherd-dev/shepherd/replication/changeevent"
)

// This file renders events in the three formats: pure functions of the
// row images and the table's columns, as package changeevent's are, so
// that an event produced again after a crash is byte for byte the first.
// Values are changeevent's JSON values in every format (Canal's are
// quoted: it gives every value as a string).

// table is what the formats need of a change's table, read once per
// change from its table map.
type table struct {
	db, name string // source names
	cols     []changeevent.Column
	pk       []int // column indexes of the primary key; none without one
}

// appendKey writes the message key: the primary key's columns as a JSON
// object, {"id":7}, of the after image (the before image for a delete).
// A table without a primary key has no key (nil).
func appendKey(b []byte, t *table, row []any) ([]byte, error) {
	if len(t.pk) == 0 {
		return nil, nil
	}
	b = append(b, '{')
	var err error
	for i, c := range t.pk {
		if i > 0 {
			b = append(b, ',')
		}
		b = changeevent.AppendJSONString(b, t.cols[c].Name)
		b = append(b, ':')
		if b, err = changeevent.AppendValue(b, &t.cols[c], row[c]); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendValues writes a row image as an object of column name to value,
// the columns where keep is true only (every column when keep is nil);
// quoted turns every non-null value into a string.
func appendValues(b []byte, t *table, row []any, keep []bool, quoted bool) ([]byte, error) {
	b = append(b, '{')
	first := true
	var err error
	for i := range t.cols {
		if keep != nil && !keep[i] {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = changeevent.AppendJSONString(b, t.cols[i].Name)
		b = append(b, ':')
		at := len(b)
		if b, err = changeevent.AppendValue(b, &t.cols[i], row[i]); err != nil {
			return b, err
		}
		if quoted && b[at] != '"' && b[at] != 'n' { // a number: null stays null
			b = append(b, '"')
			copy(b[at+1:], b[at:len(b)-1])
			b[at] = '"'
			b = append(b, '"')
		}
	}
	return append(b, '}'), nil
}

// changed marks the columns whose value an update changed, comparing
// their JSON values.
func changed(t *table, before, after []any) ([]bool, error) {
	keep := make([]bool, len(t.cols))
	var x, y []byte
	var err error
	for i := range t.cols {
		if x, err = changeevent.AppendValue(x[:0], &t.cols[i], before[i]); err != nil {
			return nil, err
		}
		if y, err = changeevent.AppendValue(y[:0], &t.cols[i], after[i]); err != nil {
			return nil, err
		}
		keep[i] = !bytes.Equal(x, y)
	}
	return keep, nil
}

// Canal's operation types.
var canalTypes = map[string]string{changeevent.OpCreate: "INSERT", changeevent.OpUpdate: "UPDATE", changeevent.OpDelete: "DELETE"}

// appendCanalRow writes one row change as Canal's flat message: data
// holds the row (the after image, the before image for a delete), old
// the changed columns' values before an update; every value is a
// string. es and ts are both the source's commit time (milliseconds),
// and id the event's index in its transaction, so that a re-sent event
// is the same.
func appendCanalRow(b []byte, t *table, op string, before, after []any, src *changeevent.Source) ([]byte, error) {
	row := after
	if op == changeevent.OpDelete {
		row = before
	}
	var err error
	b = append(b, `{"data":[`...)
	if b, err = appendValues(b, t, row, nil, true); err != nil {
		return b, err
	}
	b = append(b, `],"database":`...)
	b = changeevent.AppendJSONString(b, t.db)
	b = append(b, `,"es":`...)
	b = strconv.AppendInt(b, src.TSMS, 10)
	b = append(b, `,"gtid":`...)
	b = changeevent.AppendJSONString(b, src.GTID)
	b = append(b, `,"id":`...)
	b = strconv.AppendInt(b, int64(src.Row), 10)
	b = append(b, `,"isDdl":false,"mysqlType":{`...)
	for i := range t.cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = changeevent.AppendJSONString(b, t.cols[i].Name)
		b = append(b, ':')
		b = changeevent.AppendJSONString(b, mysqlType(&t.cols[i]))
	}
	b = append(b, `},"old":`...)
	if op == changeevent.OpUpdate {
		keep, err := changed(t, before, after)
		if err != nil {
			return b, err
		}
		b = append(b, '[')
		if b, err = appendValues(b, t, before, keep, true); err != nil {
			return b, err
		}
		b = append(b, ']')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"pkNames":`...)
	if len(t.pk) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, c := range t.pk {
			if i > 0 {
				b = append(b, ',')
			}
			b = changeevent.AppendJSONString(b, t.cols[c].Name)
		}
		b = append(b, ']')
	}
	b = append(b, `,"sql":"","sqlType":{`...)
	for i := range t.cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = changeevent.AppendJSONString(b, t.cols[i].Name)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(sqlType(&t.cols[i])), 10)
	}
	b = append(b, `},"table":`...)
	b = changeevent.AppendJSONString(b, t.name)
	b = append(b, `,"ts":`...)
	b = strconv.AppendInt(b, src.TSMS, 10)
	b = append(b, `,"type":`...)
	b = changeevent.AppendJSONString(b, canalTypes[op])
	return append(b, '}'), nil
}

// appendCanalDDL writes a schema change as Canal's flat message: isDdl,
// the statement in sql, its type from its first words.
func appendCanalDDL(b []byte, schema, query string, src *changeevent.Source) []byte {
	b = append(b, `{"data":null,"database":`...)
	b = changeevent.AppendJSONString(b, schema)
	b = append(b, `,"es":`...)
	b = strconv.AppendInt(b, src.TSMS, 10)
	b = append(b, `,"gtid":`...)
	b = changeevent.AppendJSONString(b, src.GTID)
	b = append(b, `,"id":`...)
	b = strconv.AppendInt(b, int64(src.Row), 10)
	b = append(b, `,"isDdl":true,"mysqlType":null,"old":null,"pkNames":null,"sql":`...)
	b = changeevent.AppendJSONString(b, query)
	b = append(b, `,"sqlType":null,"table":"","ts":`...)
	b = strconv.AppendInt(b, src.TSMS, 10)
	b = append(b, `,"type":`...)
	b = changeevent.AppendJSONString(b, canalDDLType(query))
	return append(b, '}')
}

// canalDDLType is Canal's event type of a DDL statement.
func canalDDLType(query string) string {
	w := strings.Fields(strings.ToUpper(query))
	has := func(word string) bool { return len(w) > 1 && (w[1] == word || len(w) > 2 && w[2] == word) }
	if len(w) == 0 {
		return "QUERY"
	}
	switch w[0] {
	case "CREATE":
		if has("INDEX") {
			return "CINDEX"
		}
		return "CREATE"
	case "ALTER":
		return "ALTER"
	case "DROP":
		if has("INDEX") {
			return "DINDEX"
		}
		return "ERASE"
	case "RENAME":
		return "RENAME"
	case "TRUNCATE":
		return "TRUNCATE"
	}
	return "QUERY"
}

// Maxwell's operation types.
var maxwellTypes = map[string]string{changeevent.OpCreate: "insert", changeevent.OpUpdate: "update", changeevent.OpDelete: "delete"}

// appendMaxwellRow writes one row change as Maxwell does: data holds
// the row (the after image, the before image for a delete), old the
// changed columns' values before an update. ts is the commit time in
// seconds; the last row of a source transaction has "commit":true, the
// others "xoffset", their index in it. Maxwell's optional position and
// gtid fields are always there.
func appendMaxwellRow(b []byte, t *table, op string, before, after []any, src *changeevent.Source, last bool) ([]byte, error) {
	row := after
	if op == changeevent.OpDelete {
		row = before
	}
	b = append(b, `{"database":`...)
	b = changeevent.AppendJSONString(b, t.db)
	b = append(b, `,"table":`...)
	b = changeevent.AppendJSONString(b, t.name)
	b = append(b, `,"type":`...)
	b = changeevent.AppendJSONString(b, maxwellTypes[op])
	b = appendMaxwellTail(b, src, last)
	b = append(b, `,"data":`...)
	var err error
	if b, err = appendValues(b, t, row, nil, false); err != nil {
		return b, err
	}
	if op == changeevent.OpUpdate {
		keep, err := changed(t, before, after)
		if err != nil {
			return b, err
		}
		b = append(b, `,"old":`...)
		if b, err = appendValues(b, t, before, keep, false); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendMaxwellTail writes ts, xoffset or commit, position and gtid.
func appendMaxwellTail(b []byte, src *changeevent.Source, last bool) []byte {
	b = append(b, `,"ts":`...)
	b = strconv.AppendInt(b, src.TSMS/1000, 10)
	if last {
		b = append(b, `,"commit":true`...)
	} else {
		b = append(b, `,"xoffset":`...)
		b = strconv.AppendInt(b, int64(src.Row), 10)
	}
	b = append(b, `,"position":`...)
	b = changeevent.AppendJSONString(b, src.Position())
	b = append(b, `,"gtid":`...)
	if src.GTID == "" {
		return append(b, "null"...)
	}
	return changeevent.AppendJSONString(b, src.GTID)
}

// appendMaxwellDDL writes a schema change: type "ddl", the database it
// ran in and the statement.
func appendMaxwellDDL(b []byte, schema, query string, src *changeevent.Source) []byte {
	b = append(b, `{"type":"ddl","database":`...)
	b = changeevent.AppendJSONString(b, schema)
	b = append(b, `,"sql":`...)
	b = changeevent.AppendJSONString(b, query)
	b = appendMaxwellTail(b, src, true)
	return append(b, '}')
}

// mysqlType names a column's type as the binlog describes it: without
// display widths or character lengths, which it does not log; decimal
// precision and scale, and ENUM and SET labels, it does.
func mysqlType(c *changeevent.Column) string {
	var s string
	switch c.Type {
	case gomysql.MYSQL_TYPE_TINY:
		s = "tinyint"
	case gomysql.MYSQL_TYPE_SHORT:
		s = "smallint"
	case gomysql.MYSQL_TYPE_INT24:
		s = "mediumint"
	case gomysql.MYSQL_TYPE_LONG:
		s = "int"
	case gomysql.MYSQL_TYPE_LONGLONG:
		s = "bigint"
	case gomysql.MYSQL_TYPE_FLOAT:
		s = "float"
	case gomysql.MYSQL_TYPE_DOUBLE:
		s = "double"
	case gomysql.MYSQL_TYPE_NEWDECIMAL, gomysql.MYSQL_TYPE_DECIMAL:
		return "decimal(" + strconv.Itoa(int(c.Meta>>8)) + "," + strconv.Itoa(int(c.Meta&0xff)) + ")"
	case gomysql.MYSQL_TYPE_BIT:
		return "bit"
	case gomysql.MYSQL_TYPE_YEAR:
		return "year"
	case gomysql.MYSQL_TYPE_DATE, gomysql.MYSQL_TYPE_NEWDATE:
		return "date"
	case gomysql.MYSQL_TYPE_TIME, gomysql.MYSQL_TYPE_TIME2:
		return "time"
	case gomysql.MYSQL_TYPE_DATETIME, gomysql.MYSQL_TYPE_DATETIME2:
		return "datetime"
	case gomysql.MYSQL_TYPE_TIMESTAMP, gomysql.MYSQL_TYPE_TIMESTAMP2:
		return "timestamp"
	case gomysql.MYSQL_TYPE_VARCHAR, gomysql.MYSQL_TYPE_VAR_STRING:
		if c.Charset == "binary" {
			return "varbinary"
		}
		return "varchar"
	case gomysql.MYSQL_TYPE_STRING:
		if c.Charset == "binary" {
			return "binary"
		}
		return "char"
	case gomysql.MYSQL_TYPE_BLOB, gomysql.MYSQL_TYPE_TINY_BLOB, gomysql.MYSQL_TYPE_MEDIUM_BLOB, gomysql.MYSQL_TYPE_LONG_BLOB:
		size := [...]string{"", "tiny", "", "medium", "long"}
		p := ""
		if int(c.Meta) < len(size) {
			p = size[c.Meta]
		}
		if c.Charset == "binary" {
			return p + "blob"
		}
		return p + "text"
	case gomysql.MYSQL_TYPE_JSON:
		return "json"
	case gomysql.MYSQL_TYPE_GEOMETRY:
		return "geometry"
	case gomysql.MYSQL_TYPE_ENUM, gomysql.MYSQL_TYPE_SET:
		s = "enum("
		if c.Type == gomysql.MYSQL_TYPE_SET {
			s = "set("
		}
		for i, l := range c.Labels {
			if i > 0 {
				s += ","
			}
			s += "'" + strings.ReplaceAll(l, "'", "''") + "'"
		}
		return s + ")"
	default:
		return "type " + strconv.Itoa(int(c.Type))
	}
	if c.Unsigned {
		s += " unsigned"
	}
	return s
}

// sqlType is a column's java.sql.Types code, as Canal gives it.
func sqlType(c *changeevent.Column) int {
	switch c.Type {
	case gomysql.MYSQL_TYPE_TINY:
		return -6 // TINYINT
	case gomysql.MYSQL_TYPE_SHORT:
		return 5 // SMALLINT
	case gomysql.MYSQL_TYPE_INT24, gomysql.MYSQL_TYPE_LONG:
		return 4 // INTEGER
	case gomysql.MYSQL_TYPE_LONGLONG:
		return -5 // BIGINT
	case gomysql.MYSQL_TYPE_FLOAT:
		return 7 // REAL
	case gomysql.MYSQL_TYPE_DOUBLE:
		return 8 // DOUBLE
	case gomysql.MYSQL_TYPE_NEWDECIMAL, gomysql.MYSQL_TYPE_DECIMAL:
		return 3 // DECIMAL
	case gomysql.MYSQL_TYPE_BIT:
		return -7 // BIT
	case gomysql.MYSQL_TYPE_DATE, gomysql.MYSQL_TYPE_NEWDATE, gomysql.MYSQL_TYPE_YEAR:
		return 91 // DATE
	case gomysql.MYSQL_TYPE_TIME, gomysql.MYSQL_TYPE_TIME2:
		return 92 // TIME
	case gomysql.MYSQL_TYPE_DATETIME, gomysql.MYSQL_TYPE_DATETIME2, gomysql.MYSQL_TYPE_TIMESTAMP, gomysql.MYSQL_TYPE_TIMESTAMP2:
		return 93 // TIMESTAMP
	case gomysql.MYSQL_TYPE_VARCHAR, gomysql.MYSQL_TYPE_VAR_STRING:
		if c.Charset == "binary" {
			return -3 // VARBINARY
		}
		return 12 // VARCHAR
	case gomysql.MYSQL_TYPE_STRING, gomysql.MYSQL_TYPE_ENUM, gomysql.MYSQL_TYPE_SET:
		if c.Charset == "binary" {
			return -2 // BINARY
		}
		return 1 // CHAR
	case gomysql.MYSQL_TYPE_BLOB, gomysql.MYSQL_TYPE_TINY_BLOB, gomysql.MYSQL_TYPE_MEDIUM_BLOB, gomysql.MYSQL_TYPE_LONG_BLOB:
		if c.Charset == "binary" {
			return 2004 // BLOB
		}
		return 2005 // CLOB
	case gomysql.MYSQL_TYPE_JSON:
		return -1 // LONGVARCHAR
	case gomysql.MYSQL_TYPE_GEOMETRY:
		return -2 // BINARY
	}
	return 1111 // OTHER
}
