package compat

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/shepherd-dev/shepherd/coord/recipe"

	"github.com/shepherd-dev/shepherd/coord/proto"
)

// eventTimeout bounds the wait for a notification a scenario expects.
const eventTimeout = 10 * time.Second

// script is what a scenario body drives: it opens sessions on one target
// and every operation made through them is written to the transcript.
// Scenario bodies never branch on the target.
type script struct {
	t    *testing.T
	tg   *target
	root string // every znode of the scenario lives below it
	tr   transcript
	// closers end the scenario's sessions, last opened first.
	closers []func()
}

// runScript runs body against tg and returns the rendered transcript.
// The scenario root is removed afterwards, so reruns against a long-lived
// server start clean.
func runScript(t *testing.T, tg *target, name string, body func(s *script)) []string {
	s := &script{t: t, tg: tg, root: "/t-" + name}
	t.Cleanup(func() {
		for i := len(s.closers) - 1; i >= 0; i-- {
			s.closers[i]()
		}
		s.removeRoot()
	})
	body(s)
	return s.tr.render()
}

// p joins names below the scenario root.
func (s *script) p(elem ...string) string { return path.Join(append([]string{s.root}, elem...)...) }

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// zkSession is a go-zookeeper session: the client Shepherd itself uses.
type zkSession struct {
	s    *script
	c    *zk.Conn
	id   int64
	name string // session marker, rendered S1, S2, …
}

// session opens a go-zookeeper session with a 10 s timeout and waits
// until it is established.
func (s *script) session() *zkSession {
	s.t.Helper()
	c, events, err := zk.Connect([]string{s.tg.addr}, 10*time.Second, zk.WithDialer(recipe.Dialer()), zk.WithLogger(discardLogger{}))
	if err != nil {
		s.t.Fatalf("connect to %s: %v", s.tg.name, err)
	}
	s.closers = append(s.closers, c.Close)
	deadline := time.After(eventTimeout)
	for c.State() != zk.StateHasSession {
		select {
		case <-events:
		case <-deadline:
			s.t.Fatalf("no session with %s after %v (state %v)", s.tg.name, eventTimeout, c.State())
		}
	}
	z := &zkSession{s: s, c: c, id: c.SessionID(), name: sess(c.SessionID())}
	s.tr.add("%s connect", z.name)
	return z
}

// opTimeout bounds one request. go-zookeeper has no deadline of its own:
// it waits for an answer as long as the server answers pings, so a server
// that drops a request would hang the suite.
const opTimeout = 5 * time.Second

// errNoReply reports a request the server did not answer in opTimeout.
var errNoReply = errors.New("compat: no reply")

// call runs one go-zookeeper request with opTimeout. On timeout it closes
// the session, which fails the stuck request, so later steps report errors
// instead of hanging.
func (z *zkSession) call(fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(opTimeout):
		z.c.Close()
		<-done
		return errNoReply
	}
}

func (z *zkSession) log(op string, err error, result string) {
	if err != nil {
		z.s.tr.add("%s %s -> %s", z.name, op, zkErrName(err))
		return
	}
	z.s.tr.add("%s %s -> ok | %s", z.name, op, result)
}

var openACL = zk.WorldACL(zk.PermAll)

func (z *zkSession) create(p string, data []byte, flags int32) (string, error) {
	return z.createACL(p, data, flags, openACL)
}

func (z *zkSession) createACL(p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	var got string
	err := z.call(func() (err error) { got, err = z.c.Create(p, data, flags, acl); return })
	z.log(fmt.Sprintf("create %s %s %s%s", p, fmtData(data), fmtMode(flags), fmtZkACLSuffix(acl)), err, got)
	return got, err
}

func (z *zkSession) createContainer(p string, data []byte) (string, error) {
	var got string
	err := z.call(func() (err error) { got, err = z.c.CreateContainer(p, data, zk.FlagContainer, openACL); return })
	z.log(fmt.Sprintf("createContainer %s %s", p, fmtData(data)), err, got)
	return got, err
}

func (z *zkSession) createTTL(p string, data []byte, flags int32, ttl time.Duration) (string, error) {
	var got string
	err := z.call(func() (err error) { got, err = z.c.CreateTTL(p, data, flags, openACL, ttl); return })
	z.log(fmt.Sprintf("createTTL %s %s %s ttl=%v", p, fmtData(data), fmtMode(flags), ttl), err, got)
	return got, err
}

func (z *zkSession) get(p string) ([]byte, error) {
	var data []byte
	var st *zk.Stat
	err := z.call(func() (err error) { data, st, err = z.c.Get(p); return })
	z.log("get "+p, err, fmtData(data)+" "+fmtZkStat(st))
	return data, err
}

// getW reads p and leaves a data watch.
func (z *zkSession) getW(p string) <-chan zk.Event {
	var data []byte
	var st *zk.Stat
	var ch <-chan zk.Event
	err := z.call(func() (err error) { data, st, ch, err = z.c.GetW(p); return })
	z.log("getW "+p, err, fmtData(data)+" "+fmtZkStat(st))
	return ch
}

func (z *zkSession) set(p string, data []byte, version int32) error {
	var st *zk.Stat
	err := z.call(func() (err error) { st, err = z.c.Set(p, data, version); return })
	z.log(fmt.Sprintf("set %s %s v=%d", p, fmtData(data), version), err, fmtZkStat(st))
	return err
}

func (z *zkSession) delete(p string, version int32) error {
	err := z.call(func() error { return z.c.Delete(p, version) })
	z.log(fmt.Sprintf("delete %s v=%d", p, version), err, "")
	return err
}

func (z *zkSession) exists(p string) *zk.Stat {
	var ok bool
	var st *zk.Stat
	err := z.call(func() (err error) { ok, st, err = z.c.Exists(p); return })
	if !ok {
		st = nil
	}
	z.log("exists "+p, err, fmtExists(ok, st))
	return st
}

// existsW checks p and leaves an exists (or data) watch.
func (z *zkSession) existsW(p string) <-chan zk.Event {
	var ok bool
	var st *zk.Stat
	var ch <-chan zk.Event
	err := z.call(func() (err error) { ok, st, ch, err = z.c.ExistsW(p); return })
	z.log("existsW "+p, err, fmtExists(ok, st))
	return ch
}

// children uses getChildren2, the only form go-zookeeper sends.
func (z *zkSession) children(p string) []string {
	var kids []string
	var st *zk.Stat
	err := z.call(func() (err error) { kids, st, err = z.c.Children(p); return })
	z.log("getChildren2 "+p, err, fmtChildren(kids)+" "+fmtZkStat(st))
	return kids
}

func (z *zkSession) childrenW(p string) <-chan zk.Event {
	var kids []string
	var st *zk.Stat
	var ch <-chan zk.Event
	err := z.call(func() (err error) { kids, st, ch, err = z.c.ChildrenW(p); return })
	z.log("getChildren2W "+p, err, fmtChildren(kids)+" "+fmtZkStat(st))
	return ch
}

func (z *zkSession) getACL(p string) {
	var acl []zk.ACL
	var st *zk.Stat
	err := z.call(func() (err error) { acl, st, err = z.c.GetACL(p); return })
	z.log("getACL "+p, err, fmtZkACLs(acl)+" "+fmtZkStat(st))
}

func (z *zkSession) setACL(p string, acl []zk.ACL, version int32) error {
	var st *zk.Stat
	err := z.call(func() (err error) { st, err = z.c.SetACL(p, acl, version); return })
	z.log(fmt.Sprintf("setACL %s %s v=%d", p, fmtZkACLs(acl), version), err, fmtZkStat(st))
	return err
}

func (z *zkSession) addAuth(scheme, auth string) error {
	err := z.call(func() error { return z.c.AddAuth(scheme, []byte(auth)) })
	z.log(fmt.Sprintf("addAuth %s %s", scheme, auth), err, "")
	return err
}

func (z *zkSession) sync(p string) {
	var got string
	err := z.call(func() (err error) { got, err = z.c.Sync(p); return })
	z.log("sync "+p, err, got)
}

// multi runs ops as one transaction and writes each op's result.
func (z *zkSession) multi(ops ...any) error {
	var res []zk.MultiResponse
	err := z.call(func() (err error) { res, err = z.c.Multi(ops...); return })
	var b strings.Builder
	for i, r := range res {
		if i > 0 {
			b.WriteString(", ")
		}
		switch {
		case r.Error != nil:
			b.WriteString(zkErrName(r.Error))
		case r.Stat != nil:
			b.WriteString(fmtZkStat(r.Stat))
		case r.String != "":
			b.WriteString(r.String)
		default:
			b.WriteString("ok")
		}
	}
	errName := "ok"
	if err != nil {
		errName = zkErrName(err)
	}
	z.s.tr.add("%s multi %s -> %s | [%s]", z.name, fmtZkOps(ops), errName, b.String())
	return err
}

// close ends the session with closeSession, as a clean shutdown does.
func (z *zkSession) close() {
	z.c.Close()
	z.s.tr.add("%s close", z.name)
}

// await writes the notification ch delivers, or that none came in time.
func (z *zkSession) await(ch <-chan zk.Event) { z.awaitWithin(ch, eventTimeout) }

func (z *zkSession) awaitWithin(ch <-chan zk.Event, d time.Duration) {
	select {
	case ev := <-ch:
		z.s.tr.add("%s watch %s", z.name, fmtZkEvent(ev))
	case <-time.After(d):
		z.s.tr.add("%s watch -> none within %v", z.name, d)
	}
}

// pending writes whether ch already holds a notification, without
// waiting: for ordering claims such as "the event came before the reply".
func (z *zkSession) pending(ch <-chan zk.Event, what string) {
	select {
	case ev := <-ch:
		z.s.tr.add("%s %s: watch %s already delivered", z.name, what, fmtZkEvent(ev))
	default:
		z.s.tr.add("%s %s: no watch event delivered yet", z.name, what)
	}
}

func fmtZkEvent(ev zk.Event) string {
	if ev.Err != nil {
		return fmt.Sprintf("%v %s err=%s", ev.Type, ev.Path, zkErrName(ev.Err))
	}
	return fmtEvent(proto.EventType(ev.Type), proto.KeeperState(ev.State), ev.Path)
}

func fmtExists(ok bool, st *zk.Stat) string {
	if !ok {
		return "false"
	}
	return "true " + fmtZkStat(st)
}

func fmtZkStat(st *zk.Stat) string {
	if st == nil {
		return "nil"
	}
	return fmtStat(proto.Stat(*st))
}

func toProtoACLs(acl []zk.ACL) []proto.ACL {
	if acl == nil {
		return nil
	}
	out := make([]proto.ACL, len(acl))
	for i, a := range acl {
		out[i] = proto.ACL{Perms: a.Perms, Id: proto.Id{Scheme: a.Scheme, ID: a.ID}}
	}
	return out
}

func fmtZkACLs(acl []zk.ACL) string { return fmtACLs(toProtoACLs(acl)) }

// fmtZkACLSuffix shows an ACL only when it is not the open one, which
// most creates use.
func fmtZkACLSuffix(acl []zk.ACL) string {
	if len(acl) == 1 && acl[0] == openACL[0] {
		return ""
	}
	return " acl=" + fmtZkACLs(acl)
}

func fmtZkOps(ops []any) string {
	parts := make([]string, len(ops))
	for i, op := range ops {
		switch o := op.(type) {
		case *zk.CreateRequest:
			parts[i] = fmt.Sprintf("create %s %s %s", o.Path, fmtData(o.Data), fmtMode(o.Flags))
		case *zk.SetDataRequest:
			parts[i] = fmt.Sprintf("set %s %s v=%d", o.Path, fmtData(o.Data), o.Version)
		case *zk.DeleteRequest:
			parts[i] = fmt.Sprintf("delete %s v=%d", o.Path, o.Version)
		case *zk.CheckVersionRequest:
			parts[i] = fmt.Sprintf("check %s v=%d", o.Path, o.Version)
		default:
			parts[i] = fmt.Sprintf("%T", op)
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// go-zookeeper's error values by the server code they stand for.
var zkErrCodes = map[error]proto.ErrCode{
	zk.ErrAPIError: proto.ErrAPIError, zk.ErrNoNode: proto.ErrNoNode, zk.ErrNoAuth: proto.ErrNoAuth,
	zk.ErrBadVersion: proto.ErrBadVersion, zk.ErrNoChildrenForEphemerals: proto.ErrNoChildrenForEphemerals,
	zk.ErrNodeExists: proto.ErrNodeExists, zk.ErrNotEmpty: proto.ErrNotEmpty,
	zk.ErrSessionExpired: proto.ErrSessionExpired, zk.ErrInvalidACL: proto.ErrInvalidACL,
	zk.ErrAuthFailed: proto.ErrAuthFailed, zk.ErrSessionMoved: proto.ErrSessionMoved,
	zk.ErrReconfigDisabled: proto.ErrReconfigDisabled, zk.ErrBadArguments: proto.ErrBadArguments,
}

// zkErrName names err as a server code when it is one, or as a client
// error ("client: …") when go-zookeeper raised it without asking.
func zkErrName(err error) string {
	if errors.Is(err, errNoReply) {
		return fmt.Sprintf("no reply within %v", opTimeout)
	}
	for e, code := range zkErrCodes {
		if errors.Is(err, e) {
			return fmtCode(code)
		}
	}
	// go-zookeeper has no value for some codes and reports them as
	// "unknown error: <code>".
	if rest, ok := strings.CutPrefix(err.Error(), "unknown error: "); ok {
		if c, perr := strconv.Atoi(rest); perr == nil {
			return fmtCode(proto.ErrCode(c))
		}
	}
	return "client: " + err.Error()
}

// removeRoot deletes the scenario's tree with a fresh session, outside the
// transcript, authenticated as every digest user scenarios use.
// It gives up after cleanupTimeout, for the same reason as call.
func (s *script) removeRoot() {
	c, _, err := zk.Connect([]string{s.tg.addr}, 10*time.Second, zk.WithDialer(recipe.Dialer()), zk.WithLogger(discardLogger{}))
	if err != nil {
		s.t.Logf("cleanup: connect: %v", err)
		return
	}
	done := make(chan error, 1)
	go func() {
		for _, user := range digestUsers {
			if err := c.AddAuth("digest", []byte(user)); err != nil {
				done <- fmt.Errorf("addAuth %s: %w", user, err)
				return
			}
		}
		done <- deleteTree(c, s.root)
	}()
	select {
	case err = <-done:
		c.Close()
	case <-time.After(cleanupTimeout):
		c.Close() // fails the stuck request; the rest fail fast
		<-done
		err = errNoReply
	}
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		s.t.Logf("cleanup: remove %s: %v", s.root, err)
	}
}

const cleanupTimeout = 20 * time.Second

// digestUsers are the user:password pairs of the ACL scenarios.
var digestUsers = []string{"alice:secret", "bob:hunter2"}

// deleteTree deletes p and everything below it. It lists children only
// when the node has some: a leaf may deny READ but still be deletable,
// since delete checks the parent's ACL.
func deleteTree(c *zk.Conn, p string) error {
	err := c.Delete(p, -1)
	if !errors.Is(err, zk.ErrNotEmpty) {
		return err
	}
	kids, _, err := c.Children(p)
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := deleteTree(c, path.Join(p, k)); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	return c.Delete(p, -1)
}
