package monitor

import (
	"strconv"
	"strings"

	"github.com/shepherd-dev/shepherd/core"
)

// binlogSeq splits a binlog file name into its base and sequence number
// (mysql-bin.000042 → "mysql-bin", 42); ok is false for a name without a
// numeric suffix.
func binlogSeq(file string) (base string, seq uint64, ok bool) {
	i := strings.LastIndexByte(file, '.')
	if i <= 0 || i == len(file)-1 {
		return "", 0, false
	}
	n, err := strconv.ParseUint(file[i+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return file[:i], n, true
}

// comparePos orders two binlog positions of one server by file sequence
// and offset. ok is false when they cannot be compared (different base
// names, a name without a sequence, an empty file): the caller then
// assumes nothing.
func comparePos(a, b core.Position) (c int, ok bool) {
	ab, as, aok := binlogSeq(a.File)
	bb, bs, bok := binlogSeq(b.File)
	if !aok || !bok || ab != bb {
		return 0, false
	}
	switch {
	case as < bs:
		return -1, true
	case as > bs:
		return 1, true
	case a.Pos < b.Pos:
		return -1, true
	case a.Pos > b.Pos:
		return 1, true
	}
	return 0, true
}

// compareFile orders two binlog files of one server by sequence.
func compareFile(a, b string) (int, bool) {
	return comparePos(core.Position{File: a}, core.Position{File: b})
}
