package replication

import (
	"fmt"
	"strings"
)

// IntValue is an integer the binlog decoder gave in any of Go's integer
// types (the type depends on the column's): ENUM indexes, SET masks and
// BIT values among them.
func IntValue(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case int16:
		return int64(x), true
	case int8:
		return int64(x), true
	case int:
		return int64(x), true
	case uint64:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint8:
		return int64(x), true
	}
	return 0, false
}

// EnumSetText is the text of an ENUM or SET value as the binlog holds
// it: an ENUM's 1-based index into labels (0 is MySQL's empty error
// value), or a SET's bit mask over labels, joined by commas.
func EnumSetText(v any, labels []string, set bool) (string, error) {
	kind := "ENUM"
	if set {
		kind = "SET"
	}
	n, ok := IntValue(v)
	if !ok {
		return "", fmt.Errorf("%s value of type %T", kind, v)
	}
	if !set {
		switch {
		case n == 0:
			return "", nil
		case n < 0 || int(n) > len(labels):
			return "", fmt.Errorf("ENUM index %d, but the column has %d labels", n, len(labels))
		}
		return labels[n-1], nil
	}
	mask := uint64(n)
	if len(labels) < 64 && mask>>len(labels) != 0 {
		return "", fmt.Errorf("SET mask %#x, but the column has %d labels", mask, len(labels))
	}
	var parts []string
	for i, l := range labels {
		if mask&(1<<i) != 0 {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, ","), nil
}
