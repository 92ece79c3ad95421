package tree

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// parseStats reads quota data ("count=3,bytes=100=;byteHardLimit=-1") the
// way ZooKeeper's StatsTrack does: pairs separated by runs of ',' and ';',
// each split at '=' with trailing empty pieces dropped, so "bytes=100="
// reads as 100 and "bytes==1" as -1 (an empty value). ok is false where
// StatsTrack throws: a pair without a value, or a value that is not a
// decimal long in ASCII digits (Java also takes other Unicode digits).
func parseStats(data []byte) (stats map[string]int64, ok bool) {
	stats = make(map[string]int64, 4)
	s := string(data)
	if !utf8.ValidString(s) {
		// Java decodes with replacement characters; its replacement of
		// a broken sequence may differ from Go's in count.
		s = strings.ToValidUTF8(s, string(utf8.RuneError))
	}
	if s == "" {
		return stats, true
	}
	// Java's split keeps an empty first pair before a separator (and then
	// fails on it) unless nothing but separators follows; FieldsFunc drops
	// it.
	if (s[0] == ',' || s[0] == ';') && strings.Trim(s, ",;") != "" {
		return nil, false
	}
	for pair := range strings.FieldsFuncSeq(s, func(r rune) bool { return r == ',' || r == ';' }) {
		kv := strings.Split(pair, "=")
		for len(kv) > 0 && kv[len(kv)-1] == "" {
			kv = kv[:len(kv)-1]
		}
		if len(kv) < 2 {
			return nil, false
		}
		v := int64(-1)
		if kv[1] != "" {
			var err error
			if v, err = strconv.ParseInt(kv[1], 10, 64); err != nil {
				return nil, false
			}
		}
		stats[kv[0]] = v
	}
	return stats, true
}

// statValue returns a key's value, -1 when it is missing (StatsTrack's
// "uninitialized").
func statValue(stats map[string]int64, key string) int64 {
	if v, ok := stats[key]; ok {
		return v
	}
	return -1
}

// formatStats writes quota data as StatsTrack.toString does: count and
// bytes first, then, after an extra "=" that keeps pre-3.5 parsers
// reading bytes correctly, any other keys in Java string order, each after
// a ';'.
func formatStats(stats map[string]int64) []byte {
	b := make([]byte, 0, 32)
	b = append(b, quotaCount+"="...)
	b = strconv.AppendInt(b, statValue(stats, quotaCount), 10)
	b = append(b, ","+quotaBytes+"="...)
	b = strconv.AppendInt(b, statValue(stats, quotaBytes), 10)
	var extra []string
	for k := range stats {
		if k != quotaCount && k != quotaBytes {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return b
	}
	slices.SortFunc(extra, compareUTF16)
	b = append(b, '=')
	for _, k := range extra {
		b = append(b, ';')
		b = append(b, k...)
		b = append(b, '=')
		b = strconv.AppendInt(b, stats[k], 10)
	}
	return b
}

// compareUTF16 orders strings as Java's String.compareTo does, by UTF-16
// code units: characters above U+FFFF sort as their surrogates, before
// U+E000..U+FFFF.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			if ua, ub := firstUnit(ra), firstUnit(rb); ua != ub {
				return int(ua) - int(ub)
			}
			return int(ra) - int(rb) // same high surrogate: low ones order as the runes
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// firstUnit is the first UTF-16 code unit of r.
func firstUnit(r rune) rune {
	if r < 0x10000 {
		return r
	}
	return 0xd800 + (r-0x10000)>>10
}
