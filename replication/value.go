package replication

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// This file renders binlog row values as SQL literals for the target.
// Statements are sent as text with the values inline, so that a batch of
// rows is one round trip and never a server-side prepared statement.
//
// Faithfulness rules (the binlog carries what the source stored; the
// literal must make the target store the same bytes or number):
//   - integers come signed unless the source logs signedness; an UNSIGNED
//     column reinterprets them at the column's width;
//   - FLOAT and DOUBLE are printed as the shortest decimal that parses
//     back to the same double (a FLOAT widened to double exactly, so that
//     it also compares equal in a WHERE clause);
//   - DECIMAL arrives as exact decimal text and is written unquoted, a
//     DECIMAL literal, never through a double;
//   - temporal values arrive as text (TIMESTAMP rendered in UTC, and every
//     target session runs with time_zone '+00:00');
//   - character strings are written with their column's character set as
//     introducer (_utf8mb4'…'): the bytes are taken as they are, with no
//     conversion through the connection's character set; binary strings
//     and BLOBs use _binary; multi-byte character sets whose second bytes
//     can look like a quote or backslash are written in hex;
//   - ENUM and SET arrive as an index and a bit mask and are mapped to
//     their labels through the column definition;
//   - BIT arrives as an integer and is written as one.

// hexCharsets are the character sets written as X'…' rather than escaped:
// in them a byte 0x5C or 0x27 can be the second half of a character.
var hexCharsets = map[string]bool{
	"big5": true, "cp932": true, "eucjpms": true, "euckr": true, "gb2312": true, "gbk": true,
	"gb18030": true, "sjis": true, "ujis": true, "ucs2": true, "utf16": true, "utf16le": true, "utf32": true,
}

// appendLiteral appends v, a value of column c decoded from a row event,
// as a SQL literal. In a WHERE clause (where) strings compare by bytes
// (their character set's _bin collation) and MySQL JSON compares as JSON.
func appendLiteral(b []byte, c *column, v any, where bool) ([]byte, error) {
	p, err := paramOf(c, v)
	if err != nil {
		return b, err
	}
	switch x := p.(type) {
	case nil:
		return append(b, "NULL"...), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case uint64:
		return strconv.AppendUint(b, x, 10), nil
	case float64:
		return strconv.AppendFloat(b, x, 'g', -1, 64), nil
	case string:
		if c.dataType == "enum" || c.dataType == "set" {
			return appendQuoted(b, x), nil
		}
		return appendText(b, c, x, where)
	}
	return b, fmt.Errorf("column %s: internal error: parameter of type %T", c.name, p)
}

// labelsOf maps an ENUM index (1-based; 0 is the empty error value) or a
// SET bit mask to its labels.
func labelsOf(c *column, v any) (string, error) {
	text, err := EnumSetText(v, c.labels, c.dataType == "set")
	if err != nil {
		return "", fmt.Errorf("column %s: %w (labels of the target's definition)", c.name, err)
	}
	return text, nil
}

// appendText writes a value that arrived as text or bytes, by the type of
// its column; paramOf has checked it.
func appendText(b []byte, c *column, s string, where bool) ([]byte, error) {
	switch c.dataType {
	case "decimal", "numeric":
		return append(b, s...), nil
	case "date", "datetime", "timestamp", "time", "year":
		return appendQuotedASCII(b, s), nil
	case "json":
		// MySQL's JSON type: the binlog gives JSON text. A JSON column
		// refuses binary strings, and compares with a string as a JSON
		// string scalar, so the text goes in as utf8mb4 and is cast when
		// compared.
		if where {
			b = append(b, "CAST("...)
			b = appendCharsetString(b, "utf8mb4", s)
			return append(b, " AS JSON)"...), nil
		}
		return appendCharsetString(b, "utf8mb4", s), nil
	}
	if c.charset == "" {
		return appendCharsetString(b, "binary", s), nil
	}
	b = appendCharsetString(b, c.charset, s)
	if where {
		// Match by bytes, as the row image does: under a case- or
		// accent-insensitive collation 'a' would also match 'A'.
		b = append(b, " COLLATE "...)
		b = append(b, c.charset...)
		b = append(b, "_bin"...)
	}
	return b, nil
}

// appendCharsetString writes s as a string literal in character set cs,
// taking its bytes as they are.
func appendCharsetString(b []byte, cs, s string) []byte {
	b = append(b, '_')
	b = append(b, cs...)
	if hexCharsets[cs] {
		b = append(b, " X'"...)
		b = hex.AppendEncode(b, []byte(s))
		return append(b, '\'')
	}
	return appendQuoted(b, s)
}

// appendQuoted writes s between single quotes, escaping the characters
// the server's lexer treats specially. It relies on the session's
// sql_mode not having NO_BACKSLASH_ESCAPES, which the applier ensures.
func appendQuoted(b []byte, s string) []byte {
	b = append(b, '\'')
	start := 0
	for i := 0; i < len(s); i++ {
		var esc byte
		switch s[i] {
		case 0:
			esc = '0'
		case '\'':
			esc = '\''
		case '"':
			esc = '"'
		case '\\':
			esc = '\\'
		case '\n':
			esc = 'n'
		case '\r':
			esc = 'r'
		case 0x1a:
			esc = 'Z'
		default:
			continue
		}
		b = append(b, s[start:i]...)
		b = append(b, '\\', esc)
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '\'')
}

// appendQuotedASCII quotes text known to need no escaping (temporal
// values the binlog decoder formatted), checking that it is so.
func appendQuotedASCII(b []byte, s string) []byte {
	if strings.ContainsAny(s, "'\\\x00") {
		return appendQuoted(b, s)
	}
	b = append(b, '\'')
	b = append(b, s...)
	return append(b, '\'')
}

func isNumeric(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E') {
			return false
		}
	}
	return true
}

// paramOK says whether values of column c can be sent as parameters of a
// prepared statement (the binary protocol) with the same effect as their
// literals: a parameter string is taken in the connection's character
// set, utf8mb4, so character columns of other sets keep their literals
// with an introducer.
func paramOK(c *column) bool { return c.charset == "" || c.charset == "utf8mb4" }

// paramOf is v, a value of column c decoded from a row event, as a
// parameter of a prepared statement: what appendLiteral writes as text,
// as a number or a string the server converts exactly as it does the
// literal. c must satisfy paramOK.
func paramOf(c *column, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch c.dataType {
	case "enum", "set":
		return labelsOf(c, v)
	case "bit":
		n, ok := IntValue(v)
		if !ok {
			return nil, fmt.Errorf("column %s: BIT value of type %T", c.name, v)
		}
		return uint64(n), nil
	}
	switch x := v.(type) {
	case int8:
		if c.unsigned {
			return uint64(uint8(x)), nil
		}
		return int64(x), nil
	case int16:
		if c.unsigned {
			return uint64(uint16(x)), nil
		}
		return int64(x), nil
	case int32:
		if c.unsigned {
			u := uint32(x)
			if c.dataType == "mediumint" {
				u &= 1<<24 - 1 // decoded from 3 bytes, sign-extended
			}
			return uint64(u), nil
		}
		return int64(x), nil
	case int64:
		if c.unsigned {
			return uint64(x), nil
		}
		return v, nil // already boxed: no new allocation
	case int:
		return int64(x), nil
	case uint8:
		return uint64(x), nil
	case uint16:
		return uint64(x), nil
	case uint32:
		return uint64(x), nil
	case uint64:
		return v, nil
	case float32:
		return float64(x), checkFloat(c, float64(x))
	case float64:
		return v, checkFloat(c, x)
	case decimal.Decimal:
		return x.String(), nil
	case time.Time:
		return x.UTC().Format("2006-01-02 15:04:05.999999"), nil
	case string:
		return v, checkText(c, x)
	case []byte:
		return string(x), checkText(c, string(x))
	}
	return nil, fmt.Errorf("column %s (%s): cannot write a value of type %T (partial JSON updates need binlog_row_value_options='')", c.name, c.dataType, v)
}

func checkFloat(c *column, f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("column %s: %v has no SQL literal", c.name, f)
	}
	return nil
}

// checkText refuses what a DECIMAL column's value must not be: it is
// written unquoted.
func checkText(c *column, s string) error {
	if (c.dataType == "decimal" || c.dataType == "numeric") && !isNumeric(s) {
		return fmt.Errorf("column %s: %q is not a decimal number", c.name, s)
	}
	return nil
}
