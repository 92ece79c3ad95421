package ctl

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"
)

// javaDate is the layout of java.util.Date.toString, which zkCli uses for
// ctime and mtime.
const javaDate = "Mon Jan 02 15:04:05 MST 2006"

// writeStat prints a stat as zkCli's stat block.
func writeStat(w io.Writer, st *zk.Stat, loc *time.Location) {
	date := func(ms int64) string { return time.UnixMilli(ms).In(loc).Format(javaDate) }
	// Java prints longs in hex as unsigned (Long.toHexString): a
	// container's owner is 0x8000000000000000, not -0x8000….
	fmt.Fprintf(w, "cZxid = 0x%x\nctime = %s\nmZxid = 0x%x\nmtime = %s\npZxid = 0x%x\n"+
		"cversion = %d\ndataVersion = %d\naclVersion = %d\nephemeralOwner = 0x%x\n"+
		"dataLength = %d\nnumChildren = %d\n",
		uint64(st.Czxid), date(st.Ctime), uint64(st.Mzxid), date(st.Mtime), uint64(st.Pzxid),
		st.Cversion, st.Version, st.Aversion, uint64(st.EphemeralOwner),
		st.DataLength, st.NumChildren)
}

// jsonStat is a stat in --json output: zkCli's field names, numbers as
// numbers, times in milliseconds since the Unix epoch.
type jsonStat struct {
	CZxid          int64 `json:"cZxid"`
	Ctime          int64 `json:"ctime"`
	MZxid          int64 `json:"mZxid"`
	Mtime          int64 `json:"mtime"`
	PZxid          int64 `json:"pZxid"`
	Cversion       int32 `json:"cversion"`
	DataVersion    int32 `json:"dataVersion"`
	ACLVersion     int32 `json:"aclVersion"`
	EphemeralOwner int64 `json:"ephemeralOwner"`
	DataLength     int32 `json:"dataLength"`
	NumChildren    int32 `json:"numChildren"`
}

func toJSONStat(st *zk.Stat) *jsonStat {
	if st == nil {
		return nil
	}
	return &jsonStat{
		CZxid: st.Czxid, Ctime: st.Ctime, MZxid: st.Mzxid, Mtime: st.Mtime, PZxid: st.Pzxid,
		Cversion: st.Cversion, DataVersion: st.Version, ACLVersion: st.Aversion,
		EphemeralOwner: st.EphemeralOwner, DataLength: st.DataLength, NumChildren: st.NumChildren,
	}
}

// encodeData renders znode data for JSON: the text itself when it is valid
// UTF-8, else base64 with encoding "base64". A node without data (null on
// the wire, as zkCli's create without data makes) is a JSON null.
func encodeData(b []byte) (data *string, encoding string) {
	if b == nil {
		return nil, ""
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, ""
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s, "base64"
}

// decodeData reverses encodeData.
func decodeData(data *string, encoding string) ([]byte, error) {
	if data == nil {
		return nil, nil
	}
	switch encoding {
	case "":
		return []byte(*data), nil
	case "base64":
		return base64.StdEncoding.DecodeString(*data)
	}
	return nil, fmt.Errorf("unknown data encoding %q (want base64 or none)", encoding)
}

// writeJSON prints v as one line of JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeData prints data as zkCli's get does: the bytes and a newline, or
// "null" for a node without data.
func writeData(w io.Writer, data []byte) {
	if data == nil {
		io.WriteString(w, "null\n")
		return
	}
	w.Write(data)
	io.WriteString(w, "\n")
}

// writeACL prints an ACL as zkCli's getAcl does.
func writeACL(w io.Writer, acl []zk.ACL) {
	for _, a := range acl {
		fmt.Fprintf(w, "'%s,'%s\n: %s\n", a.Scheme, a.ID, permString(a.Perms))
	}
}

// sortJava sorts names as Java's String.compareTo does (by UTF-16 code
// unit), the order zkCli prints children in.
func sortJava(names []string) {
	sort.Slice(names, func(i, j int) bool { return javaLess(names[i], names[j]) })
}

func javaLess(a, b string) bool {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

// childList prints children as zkCli's ls does: [a, b, c].
func childList(names []string) string {
	return "[" + strings.Join(names, ", ") + "]"
}

// eventTypeNames are ZooKeeper's Watcher.Event.EventType names.
var eventTypeNames = map[zk.EventType]string{
	zk.EventNodeCreated:         "NodeCreated",
	zk.EventNodeDeleted:         "NodeDeleted",
	zk.EventNodeDataChanged:     "NodeDataChanged",
	zk.EventNodeChildrenChanged: "NodeChildrenChanged",
}

// eventLine prints a node event as ZooKeeper's WatchedEvent.toString,
// which zkCli prints when a watch fires.
func eventLine(ev zk.Event) string {
	name, ok := eventTypeNames[ev.Type]
	if !ok {
		name = ev.Type.String()
	}
	return fmt.Sprintf("WatchedEvent state:SyncConnected type:%s path:%s", name, ev.Path)
}

// jsonEvent is a node event in --json output.
type jsonEvent struct {
	Type string `json:"type"`
	Path string `json:"path"`
}

func toJSONEvent(ev zk.Event) jsonEvent {
	name, ok := eventTypeNames[ev.Type]
	if !ok {
		name = ev.Type.String()
	}
	return jsonEvent{Type: name, Path: ev.Path}
}

// msDuration converts milliseconds, zkCli's unit for TTLs, to a Duration.
func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }
