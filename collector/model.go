package collector

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"time"
)

// Paths of the layout, relative to the session's root.
const (
	// LogsRoot is the collectors' subtree: sources and assignments are
	// acted on only if they and their ancestors up to LogsRoot are
	// writable by the process's identity alone (docs/security.md).
	LogsRoot       = "/logs"
	SourcesPath    = LogsRoot + "/sources"
	CollectorsPath = LogsRoot + "/collector"
	AssignerPath   = LogsRoot + "/assigner"
)

// schemaVersion is the "version" field of every document written here
// but Status.
const schemaVersion = 1

// statusSchema is the "version" of Status. Version 2 added the file
// identity of Position (fingerprint, mtime, the rotated file being
// drained and the file after it) and Status.Leaving; a version 1 status
// reads as a version 2 one without them: its files are identified by
// inode alone until the next read fingerprints them.
const statusSchema = 2

// Errors of the package.
var (
	ErrBadSource   = errors.New("collector: bad source URI")
	ErrBadName     = errors.New("collector: bad collector name")
	ErrBadDocument = errors.New("collector: malformed document")
)

// CollectorPath is the node of the collector name, holding its assignment.
func CollectorPath(name string) string { return path.Join(CollectorsPath, name) }

// StatusPath is the status node of the collector name.
func StatusPath(name string) string { return path.Join(CollectorsPath, name, "status") }

// Sources is the document at SourcesPath: the sources to collect.
type Sources struct {
	Version int      `json:"version"`
	Sources []string `json:"sources"`
}

// Lease is one source assigned to a collector. ID changes every time the
// source is given to a collector, so that a collector can tell "still
// mine" from "taken and given back" across assignment changes it missed.
type Lease struct {
	URI string `json:"uri"`
	ID  string `json:"lease"`
}

// Assignment is the data of a collector's node: its sources.
type Assignment struct {
	Version int       `json:"version"`
	Sources []Lease   `json:"sources"`
	Updated time.Time `json:"updated,omitzero"`
	By      string    `json:"by,omitempty"` // the assigner that wrote it
}

// lease returns the lease of uri, if assigned.
func (a Assignment) lease(uri string) (string, bool) {
	for _, l := range a.Sources {
		if l.URI == uri {
			return l.ID, true
		}
	}
	return "", false
}

// URIs returns the assigned sources, sorted.
func (a Assignment) URIs() []string {
	out := make([]string, 0, len(a.Sources))
	for _, l := range a.Sources {
		out = append(out, l.URI)
	}
	sort.Strings(out)
	return out
}

// Position is where reading a source stands: the next byte to read and,
// for files, the file holding it, identified by inode and by a
// fingerprint of its first bytes (which a rename, a copy or a gzip of
// the file keep, and a truncation or a refill changes). All fields are
// comparable: a Position is compared with ==.
type Position struct {
	// Path is the file as a match of the source's glob: where it was
	// written to (the active file) when reading started. Rotated copies
	// are looked for next to it, named Path followed by a suffix.
	Path   string `json:"path,omitempty"`
	Ino    uint64 `json:"ino,omitempty"` // inode of the file holding Offset (for Drain, of Drain)
	Offset int64  `json:"offset"`        // in the file's content (for a .gz, decompressed)
	// FP is the hex SHA-256 of the first FPLen bytes of the content (at
	// most fpSize); FPLen 0 means not fingerprinted yet.
	FP    string `json:"fp,omitempty"`
	FPLen int64  `json:"fp_len,omitempty"`
	// MTime is the modification time (Unix ns) of the content's file as
	// last read while uncompressed: the files modified later come after it.
	MTime int64 `json:"mtime,omitempty"`
	// Drain is set while the content is read from a rotated file that is
	// not at Path: a renamed, copied (copytruncate) or compressed file.
	Drain string `json:"drain,omitempty"`
	// Next is the file that follows the drained one, when known: after a
	// copytruncate, the truncated file at Path with what it held then.
	NextIno   uint64 `json:"next_ino,omitempty"`
	NextFP    string `json:"next_fp,omitempty"`
	NextFPLen int64  `json:"next_fp_len,omitempty"`
}

// Progress is a collector's committed state of one source.
type Progress struct {
	// Seq counts commits of this source across all its owners; the
	// highest Seq over all statuses is the source's latest commit.
	Seq   int64    `json:"seq"`
	Lease string   `json:"lease"`
	Pos   Position `json:"pos"`
	// Out is the output segment being written, OutSize its committed size.
	Out     string `json:"out,omitempty"`
	OutSize int64  `json:"out_size"`
	Lines   int64  `json:"lines"` // lines this collector committed for the source
	Lag     int64  `json:"lag"`   // bytes of the source not yet read, when known
	Owned   bool   `json:"owned"` // false once the source was taken away
}

// Load is what a collector reports of its work.
type Load struct {
	BytesPerSec float64 `json:"bytes_per_sec"`
	LinesPerSec float64 `json:"lines_per_sec"`
	Sources     int     `json:"sources"`
}

// Status is the data of a collector's status node.
type Status struct {
	Version int       `json:"version"`
	Name    string    `json:"name"`
	Time    time.Time `json:"time"`
	// Leaving is the last status of a collector that stopped on purpose:
	// it is dead from then on, and the assigner moves its sources at its
	// next round instead of after DeadAfter.
	Leaving  bool                `json:"leaving,omitempty"`
	Load     Load                `json:"load"`
	Progress map[string]Progress `json:"progress"`
	// Refused is why the collector collects nothing: its assignment node
	// could have been written by an untrusted session. Empty otherwise.
	Refused string `json:"refused,omitempty"`
}

func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("collector: encode %T: %v", v, err)) // only plain structs are encoded
	}
	return b
}

// decode reads a document; empty data is the zero document.
func decode(what string, data []byte, v any) error {
	if len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadDocument, what, err)
	}
	return nil
}

// ValidName checks a collector name: one path element.
func ValidName(name string) error {
	if name == "" || name == "." || name == ".." || name == "status" || len(name) > 200 {
		return fmt.Errorf("%w: %q", ErrBadName, name)
	}
	for _, r := range name {
		if r == '/' || r < ' ' {
			return fmt.Errorf("%w: %q: no slashes or control characters", ErrBadName, name)
		}
	}
	return nil
}
