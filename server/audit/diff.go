package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
)

// Change is one field an audited action changed: its dotted path in the
// entry's before and after ("source.host", "filter.include[0]"; "" for
// the whole value when it is not an object), what it was and what it
// became. Op is "changed", "added" (not in before) or "removed" (not in
// after).
type Change struct {
	Path   string `json:"path"`
	Op     string `json:"op"`
	Before any    `json:"before,omitempty"`
	After  any    `json:"after,omitempty"`
	// Text is the change as one line (String), as the audit page shows it.
	Text string `json:"text"`
}

// Ops of a Change.
const (
	OpChanged = "changed"
	OpAdded   = "added"
	OpRemoved = "removed"
)

// MaxChanges bounds what Diff returns; an entry's before and after are
// bounded by MaxEntry already, but an array of small items would list
// thousands of fields. The last Change of a longer diff says how many
// more there are (Op "more", Path empty).
const MaxChanges = 200

// String is the change as one line: "source.host: db1 → db2",
// "filter.exclude: added [\"a.*\"]", "env.TOKEN: removed (was \"***\")".
func (c Change) String() string {
	prefix := ""
	if c.Path != "" {
		prefix = c.Path + ": "
	}
	switch c.Op {
	case OpAdded:
		return prefix + "added " + valueText(c.After)
	case OpRemoved:
		return prefix + "removed (was " + valueText(c.Before) + ")"
	case "more":
		return fmt.Sprintf("… %v more changes", c.After)
	}
	return prefix + valueText(c.Before) + " → " + valueText(c.After)
}

// valueText shows a string as itself (quoted only when empty), anything
// else as compact JSON.
func valueText(v any) string {
	if s, ok := v.(string); ok && s != "" {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Diff lists the fields in which after differs from before, as the JSON
// they encode to: the keys of objects in both, by dotted path,
// recursively; keys only in one as added or removed with their whole
// value; arrays of the same length item by item (path[i]), of different
// lengths as one change of the whole array; anything else compared as a
// value. A nil before or after (a creation, a deletion) is an empty
// object: every top-level key is added or removed. The order is that of
// the sorted keys. Diff is pure: it never fails, and values that do not
// encode are compared as they are.
func Diff(before, after any) []Change {
	var out []Change
	diffValue(&out, "", normalize(before), normalize(after))
	if len(out) > MaxChanges {
		more := len(out) - (MaxChanges - 1)
		out = append(out[:MaxChanges-1], Change{Op: "more", After: more})
	}
	for i := range out {
		out[i].Text = out[i].String()
	}
	return out
}

// normalize is v as encoding/json decodes its encoding: maps, slices,
// strings, json.Numbers (exact, so that a position is not rounded), bools
// and nil; a nil v is an empty object.
func normalize(v any) any {
	if v == nil {
		return map[string]any{}
	}
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var out any
	if d.Decode(&out) != nil {
		return v
	}
	if out == nil {
		return map[string]any{}
	}
	return out
}

func diffValue(out *[]Change, path string, before, after any) {
	switch b := before.(type) {
	case map[string]any:
		if a, ok := after.(map[string]any); ok {
			diffObject(out, path, b, a)
			return
		}
	case []any:
		if a, ok := after.([]any); ok && len(a) == len(b) {
			for i := range b {
				diffValue(out, path+"["+strconv.Itoa(i)+"]", b[i], a[i])
			}
			return
		}
	}
	if !reflect.DeepEqual(before, after) {
		*out = append(*out, Change{Path: path, Op: OpChanged, Before: before, After: after})
	}
}

func diffObject(out *[]Change, path string, before, after map[string]any) {
	keys := slices.Sorted(maps.Keys(before))
	for k := range after {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := k
		if path != "" {
			p = path + "." + k
		}
		b, inBefore := before[k]
		a, inAfter := after[k]
		switch {
		case !inBefore:
			*out = append(*out, Change{Path: p, Op: OpAdded, After: a})
		case !inAfter:
			*out = append(*out, Change{Path: p, Op: OpRemoved, Before: b})
		default:
			diffValue(out, p, b, a)
		}
	}
}
