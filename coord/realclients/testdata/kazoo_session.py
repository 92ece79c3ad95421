#!/usr/bin/python3
"""Drive one kazoo (Python ZooKeeper client) session against a server.

Usage: kazoo_session.py HOST:PORT ROOT

Every check prints "ok <name>" when it holds. Checks come in sections
(SECTIONS, at the end); the first check of a section that does not hold
prints "FAIL [<section>] <name>: <what was expected and what happened>"
and ends that section, the others still run. The script exits 1 if any
section failed; otherwise it prints "PASS <count> checks" and exits 0.
ROOT is a path the script owns (it must not exist yet), so runs against a
shared server do not see each other.

The Go test coord/realclients runs this script against Apache ZooKeeper 3.8
(proving the script right) and against `shepherd coord` (proving the server
compatible). Only kazoo's public API is used, as an application would.
"""

import base64
import hashlib
import logging
import queue
import socket
import sys
import threading
import time
import traceback

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    AuthFailedError,
    BadVersionError,
    ConnectionLoss,
    NoChildrenForEphemeralsError,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    RuntimeInconsistency,
)
from kazoo.protocol.states import EventType
from kazoo.recipe.cache import TreeCache, TreeEvent
from kazoo.security import ACL, Id, Permissions, make_digest_acl

# WAIT bounds every wait for something the server must do (a watch firing,
# a reconnection); nothing here should take more than a fraction of it.
WAIT = 10.0
# Reconnect quickly after a connection loss: the default retry backs off
# to a minute, longer than a test wants to wait.
FAST_RETRY = dict(max_tries=-1, delay=0.05, backoff=1.5, max_delay=0.5)

checks = 0


class CheckFailed(Exception):
    """A check did not hold; the message says what was expected."""


def ok(name):
    global checks
    checks += 1
    print("ok " + name, flush=True)


def check(name, cond, detail):
    if not cond:
        raise CheckFailed("%s: %s" % (name, detail))
    ok(name)


def check_eq(name, got, want):
    check(name, got == want, "got %r, want %r" % (got, want))


def check_raises(name, exc_type, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc_type:
        ok(name)
        return
    except Exception as e:  # noqa: BLE001 - report whatever came instead
        raise CheckFailed("%s: raised %s (%s), want %s"
                          % (name, type(e).__name__, e, exc_type.__name__))
    raise CheckFailed("%s: succeeded, want %s" % (name, exc_type.__name__))


def check_call(name, fn, *args, **kwargs):
    """Call fn; the check holds if it returns instead of raising."""
    try:
        result = fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - report whatever came
        raise CheckFailed("%s: raised %s (%s)" % (name, type(e).__name__, e))
    ok(name)
    return result


def wait_for(name, pred, detail=lambda: "", wait=WAIT):
    """Poll pred until it is true or wait passes."""
    deadline = time.monotonic() + wait
    while not pred():
        if time.monotonic() > deadline:
            raise CheckFailed("%s: not true after %.0fs %s" % (name, wait, detail()))
        time.sleep(0.01)
    ok(name)


def next_item(name, q):
    try:
        return q.get(timeout=WAIT)
    except queue.Empty:
        raise CheckFailed("%s: no callback within %.0fs" % (name, WAIT))


def new_client(hosts, **kwargs):
    c = KazooClient(hosts=hosts, timeout=10.0, connection_retry=FAST_RETRY, **kwargs)
    c.start(timeout=WAIT)
    return c


class Proxy:
    """A TCP relay in front of the server whose connections can be cut.

    A client connected through it sees a connection loss while its session
    lives on in the server, which is how a network blip looks. While held,
    new connections are accepted and closed at once, so the client stays
    away until release().
    """

    def __init__(self, target):
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.addr = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.socks = []
        self.held = False
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.listener.accept()
            except OSError:
                return  # listener closed
            with self.lock:
                self.accepted += 1
                if self.held:
                    c.close()
                    continue
            try:
                s = socket.create_connection(self.target, timeout=WAIT)
                s.settimeout(None)
            except OSError:
                c.close()
                continue
            with self.lock:
                self.socks += [c, s]
            threading.Thread(target=self._pump, args=(c, s), daemon=True).start()
            threading.Thread(target=self._pump, args=(s, c), daemon=True).start()

    @staticmethod
    def _pump(src, dst):
        try:
            while True:
                b = src.recv(65536)
                if not b:
                    break
                dst.sendall(b)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self, hold):
        """Break every relayed connection; with hold, refuse new ones."""
        with self.lock:
            self.held = hold
            socks, self.socks = self.socks, []
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)  # wakes the pump blocked in recv
            except OSError:
                pass
            s.close()

    def release(self):
        with self.lock:
            self.held = False

    def close(self):
        self.listener.close()
        self.cut(hold=True)


def basics(env):
    zk, root = env.zk, env.root
    check("connected", zk.connected and zk.client_id is not None, "state %s" % zk.state)
    check("session id is nonzero", zk.client_id[0] != 0, "client_id %r" % (zk.client_id,))
    check_eq("four-letter ruok", zk.command(b"ruok"), "imok")
    version = zk.server_version()
    check("server_version parses envi", len(version) >= 3 and all(isinstance(v, int) for v in version),
          "got %r" % (version,))

    zk.ensure_path(root + "/a/b/c")
    check("ensure_path creates every level", zk.exists(root + "/a/b/c") is not None, "missing")
    zk.ensure_path(root + "/a/b/c")
    ok("ensure_path is idempotent")

    path = zk.create(root + "/eph", b"e", ephemeral=True)
    check_eq("create ephemeral returns path", path, root + "/eph")
    _, stat = zk.get(path)
    check_eq("ephemeral owner is the session", stat.ephemeralOwner, zk.client_id[0])
    check_raises("ephemeral cannot have children", NoChildrenForEphemeralsError,
                 zk.create, root + "/eph/child")
    check_raises("create existing node", NodeExistsError, zk.create, root + "/eph")
    check_raises("create under missing parent", NoNodeError, zk.create, root + "/nope/child")

    zk.create(root + "/seq")
    names = [zk.create(root + "/seq/n-", b"", sequence=True) for _ in range(3)]
    names.append(zk.create(root + "/seq/e-", b"", ephemeral=True, sequence=True))
    check_eq("sequence numbers count the parent's creates", names,
             [root + "/seq/n-0000000000", root + "/seq/n-0000000001",
              root + "/seq/n-0000000002", root + "/seq/e-0000000003"])
    _, stat = zk.get(root + "/seq")
    check_eq("parent cversion and numChildren", (stat.cversion, stat.numChildren), (4, 4))
    path, stat = zk.create(root + "/withstat", b"xyz", include_data=True)
    check_eq("create2 returns the new stat", (path, stat.version, stat.dataLength, stat.czxid == stat.mzxid),
             (root + "/withstat", 0, 3, True))


def versions(env):
    zk, root = env.zk, env.root
    p = root + "/v"
    zk.create(p, b"0")
    stat = zk.set(p, b"1", version=0)
    check_eq("set with matching version", stat.version, 1)
    check_raises("set with stale version", BadVersionError, zk.set, p, b"x", version=0)
    stat = zk.set(p, b"2", version=-1)
    check_eq("set with version -1 ignores version", stat.version, 2)
    data, stat = zk.get(p)
    check_eq("get returns data and version", (data, stat.version, stat.dataLength), (b"2", 2, 1))
    check_raises("delete with stale version", BadVersionError, zk.delete, p, version=1)
    zk.delete(p, version=2)
    check_raises("get after delete", NoNodeError, zk.get, p)
    zk.create(p, b"")
    data, stat = zk.get(p)
    check_eq("empty data is not None", (data, stat.dataLength), (b"", 0))
    zk.create(p + "/kid")
    check_raises("delete non-empty node", NotEmptyError, zk.delete, p)
    zk.delete(p, recursive=True)
    check("recursive delete", zk.exists(p) is None, "node still exists")


def watches(env):
    zk, root = env.zk, env.root
    base = root + "/cw"
    zk.create(base)
    kids = queue.Queue()
    zk.ChildrenWatch(base)(lambda children: kids.put(sorted(children)))
    check_eq("ChildrenWatch initial call", next_item("ChildrenWatch initial", kids), [])
    zk.create(base + "/x")
    check_eq("ChildrenWatch sees create", next_item("ChildrenWatch create", kids), ["x"])
    zk.create(base + "/y")
    check_eq("ChildrenWatch sees second create", next_item("ChildrenWatch create y", kids), ["x", "y"])
    zk.delete(base + "/x")
    check_eq("ChildrenWatch sees delete", next_item("ChildrenWatch delete", kids), ["y"])

    node = root + "/dw"
    seen = queue.Queue()

    def on_data(data, stat):
        seen.put((data, stat.version if stat else None))
    zk.DataWatch(node)(on_data)
    check_eq("DataWatch initial call on missing node", next_item("DataWatch initial", seen), (None, None))
    zk.create(node, b"a")
    check_eq("DataWatch sees create", next_item("DataWatch create", seen), (b"a", 0))
    zk.set(node, b"b")
    check_eq("DataWatch sees set", next_item("DataWatch set", seen), (b"b", 1))
    zk.delete(node)
    check_eq("DataWatch sees delete", next_item("DataWatch delete", seen), (None, None))

    # A raw one-shot watch fires once, with the event type and path.
    events = queue.Queue()
    zk.create(node, b"c")
    zk.get(node, watch=events.put)
    zk.set(node, b"d")
    ev = next_item("raw data watch", events)
    check_eq("raw data watch event", (ev.type, ev.path), (EventType.CHANGED, node))
    zk.set(node, b"e")
    zk.sync(node)
    check("raw watch is one-shot", events.empty(), "second event %r" % (None if events.empty() else events.queue[0],))
    zk.exists(root + "/later", watch=events.put)
    zk.create(root + "/later")
    ev = next_item("exists watch", events)
    check_eq("exists watch sees creation", (ev.type, ev.path), (EventType.CREATED, root + "/later"))


def transactions(env):
    zk, root = env.zk, env.root
    base = root + "/tx"
    t = zk.transaction()
    t.create(base, b"t")
    t.create(base + "/child", b"c")
    t.set_data(base, b"t2")
    t.check(base, 1)
    results = t.commit()
    check_eq("transaction commits every op", [type(r).__name__ for r in results],
             ["str", "str", "ZnodeStat", "bool"])
    check_eq("transaction results", (results[0], results[1], results[2].version, results[3]),
             (base, base + "/child", 1, True))
    check_eq("transaction applied", zk.get(base)[0], b"t2")

    t = zk.transaction()
    t.create(base + "/never", b"")
    t.check(base, 99)
    t.set_data(base, b"never")
    results = t.commit()
    # ZooKeeper marks the ops before the failing one rolled back and the
    # ones after it as never tried (RuntimeInconsistency).
    check_eq("failed transaction reports each op", [type(r) for r in results],
             [RolledBackError, BadVersionError, RuntimeInconsistency])
    check("failed transaction applies nothing",
          zk.exists(base + "/never") is None and zk.get(base)[0] == b"t2", "partial effects visible")

    t = zk.transaction()
    t.delete(base + "/child")
    t.delete(base)
    results = t.commit()
    check_eq("delete parent after child in one transaction", results, [True, True])


def acls(env):
    zk, hosts, root = env.zk, env.hosts, env.root
    acl = make_digest_acl("alice", "secret", all=True)
    p = root + "/secret"
    zk.create(p, b"hidden", acl=[acl])
    check("exists needs no permission", zk.exists(p) is not None, "exists returned None")
    check_raises("get without auth is NoAuth", NoAuthError, zk.get, p)
    check_raises("get_acls without auth is NoAuth", NoAuthError, zk.get_acls, p)
    check_raises("set without auth is NoAuth", NoAuthError, zk.set, p, b"x")
    check_raises("create child without auth is NoAuth", NoAuthError, zk.create, p + "/kid")

    zk.add_auth("digest", "alice:secret")
    check_eq("get after add_auth", zk.get(p)[0], b"hidden")
    got, stat = zk.get_acls(p)
    check_eq("get_acls returns the digest ACL", [(a.perms, a.id.scheme, a.id.id) for a in got],
             [(acl.perms, "digest", acl.id.id)])
    zk.set_acls(p, [acl, make_digest_acl("bob", "pw", read=True)], version=stat.aversion)
    got, stat = zk.get_acls(p)
    check_eq("set_acls bumps aversion", (len(got), stat.aversion), (2, 1))

    other = new_client(hosts, auth_data=[("digest", "alice:wrong")])
    try:
        check_raises("wrong password is NoAuth", NoAuthError, other.get, p)
    finally:
        other.stop()
        other.close()
    bob = new_client(hosts, auth_data=[("digest", "bob:pw")])
    try:
        check_eq("read-only grant allows get", bob.get(p)[0], b"hidden")
        check_raises("read-only grant refuses set", NoAuthError, bob.set, p, b"x")
    finally:
        bob.stop()
        bob.close()


def lock(env):
    zk, zk2, root = env.zk, env.zk2, env.root
    path = root + "/lock"
    alice = zk.Lock(path, "alice")
    bob = zk2.Lock(path, "bob")
    check("alice acquires", alice.acquire(timeout=WAIT), "acquire returned False")
    check("bob cannot acquire while alice holds", not bob.acquire(blocking=False), "bob acquired too")

    order = []
    bob_holds = threading.Event()
    bob_done = threading.Event()

    def contend():
        if bob.acquire(timeout=WAIT):
            order.append("bob")
            bob_holds.set()
            bob.release()
        bob_done.set()
    t = threading.Thread(target=contend, daemon=True)
    t.start()
    wait_for("contenders are queued in order", lambda: alice.contenders() == ["alice", "bob"],
             lambda: "(contenders %r)" % (alice.contenders(),))
    check("bob waits while alice holds", not bob_holds.is_set(), "bob holds the lock too")
    order.append("alice")
    alice.release()
    check("bob acquires after alice releases", bob_holds.wait(WAIT), "bob never acquired")
    bob_done.wait(WAIT)
    t.join(WAIT)
    check_eq("lock order", order, ["alice", "bob"])
    check_eq("lock nodes are cleaned up", zk.get_children(path), [])


def election(env):
    zk, zk2, root = env.zk, env.zk2, env.root
    path = root + "/election"
    leaders = []
    stop = {"alice": threading.Event(), "bob": threading.Event()}

    def lead(name):
        leaders.append(name)
        stop[name].wait(WAIT)
    e1 = zk.Election(path, "alice")
    e2 = zk2.Election(path, "bob")
    t1 = threading.Thread(target=e1.run, args=(lead, "alice"), daemon=True)
    t1.start()
    wait_for("first contender leads", lambda: leaders == ["alice"], lambda: "(leaders %r)" % (leaders,))
    t2 = threading.Thread(target=e2.run, args=(lead, "bob"), daemon=True)
    t2.start()
    wait_for("election contenders in order", lambda: e1.contenders() == ["alice", "bob"],
             lambda: "(contenders %r)" % (e1.contenders(),))
    check_eq("only one leader", leaders, ["alice"])
    stop["alice"].set()
    wait_for("next contender leads after the leader quits", lambda: leaders == ["alice", "bob"],
             lambda: "(leaders %r)" % (leaders,))
    stop["bob"].set()
    t1.join(WAIT)
    t2.join(WAIT)


def recipes(env):
    """kazoo's recipes build on versioned writes, transactions and watches."""
    zk, zk2, root = env.zk, env.zk2, env.root
    counters = [zk.Counter(root + "/counter"), zk2.Counter(root + "/counter")]

    def bump(counter):
        for _ in range(20):
            counter += 1  # a versioned set, retried on BadVersion
    threads = [threading.Thread(target=bump, args=(c,), daemon=True) for c in counters]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    check_eq("Counter under contention loses no increment", counters[0].value, 40)

    q = zk.LockingQueue(root + "/lockingqueue")
    q.put(b"last")  # default priority 100; lower goes first
    q.put(b"second", priority=1)
    q.put(b"first", priority=0)
    got = []
    for _ in range(3):
        got.append(q.get(WAIT))
        q.consume()  # a transaction: delete the entry and its lock node
    check_eq("LockingQueue hands out by priority, then order", got, [b"first", b"second", b"last"])
    check_eq("LockingQueue is empty after consuming", len(q), 0)

    one = zk.Semaphore(root + "/semaphore", "one", max_leases=1)
    two = zk2.Semaphore(root + "/semaphore", "two", max_leases=1)
    check("Semaphore grants its lease", one.acquire(timeout=WAIT), "first acquire failed")
    check("Semaphore refuses a second lease", not two.acquire(blocking=False), "second lease granted")
    check_eq("Semaphore lease holders", one.lease_holders(), ["one"])
    one.release()
    check("Semaphore lease passes on release", two.acquire(timeout=WAIT), "lease not passed")
    two.release()

    events = queue.Queue()
    base = root + "/tree"
    zk.create(base)
    cache = TreeCache(zk, base)
    cache.listen(lambda e: events.put((e.event_type, e.event_data.path if e.event_data else None)))
    cache.start()
    try:
        steps = [
            (lambda: None, [(TreeEvent.NODE_ADDED, base), (TreeEvent.INITIALIZED, None)]),
            (lambda: zk.create(base + "/a", b"1"), [(TreeEvent.NODE_ADDED, base + "/a")]),
            (lambda: zk.create(base + "/a/b", b"2"), [(TreeEvent.NODE_ADDED, base + "/a/b")]),
            (lambda: zk.set(base + "/a", b"3"), [(TreeEvent.NODE_UPDATED, base + "/a")]),
            (lambda: zk.delete(base + "/a/b"), [(TreeEvent.NODE_REMOVED, base + "/a/b")]),
            (lambda: zk.delete(base + "/a"), [(TreeEvent.NODE_REMOVED, base + "/a")]),
        ]
        got, want = [], []
        for change, expect in steps:
            change()
            want += expect
            got += [next_item("TreeCache event", events) for _ in expect]
        check_eq("TreeCache follows a subtree", got, want)
    finally:
        cache.close()


# ZooKeeper's default authentication providers are digest and ip. Each
# auth section has a client of its own: a failed addauth closes the
# connection and ends the session.

def auth_digest_without_colon(env):
    """ZooKeeper hashes the whole string; the user is what precedes the
    first colon, here all of it."""
    c = new_client(env.hosts)
    try:
        check_call("digest credentials without a colon are accepted", c.add_auth, "digest", "nocolon")
        ident = "nocolon:" + base64.b64encode(hashlib.sha1(b"nocolon").digest()).decode()
        c.create(env.root + "/nocolon", b"mine", acl=[ACL(Permissions.ALL, Id("digest", ident))])
        check_eq("digest without a colon: the identity hashes the whole string",
                 c.get(env.root + "/nocolon")[0], b"mine")
    finally:
        c.stop()
        c.close()


def auth_ip(env):
    """The ip provider ignores the data and vouches for the peer address."""
    c = new_client(env.hosts)
    try:
        check_call("addauth ip is accepted", c.add_auth, "ip", "192.0.2.1")
        c.create(env.root + "/byip", b"local", acl=[ACL(Permissions.ALL, Id("ip", "127.0.0.1"))])
        check_eq("an ip ACL admits the client's address", c.get(env.root + "/byip")[0], b"local")
    finally:
        c.stop()
        c.close()


def auth_unknown_scheme(env):
    c = new_client(env.hosts)
    try:
        check_raises("an unknown scheme fails authentication", AuthFailedError,
                     c.add_auth, "nosuchscheme", "x")
        check_eq("a failed authentication ends the session", c.state, KazooState.LOST)
    finally:
        c.stop()
        c.close()


class LogRecords(logging.Handler):
    """Keeps the messages a logger emits, for checks on what kazoo saw."""

    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def auth_sasl_invalid(env):
    """kazoo's test_invalid_sasl_auth: a SASL DIGEST-MD5 login the server
    does not accept. ZooKeeper answers AuthFailed and drops the connection;
    kazoo raises AuthFailedError in its connection loop, logs AUTH_FAILED
    and gives the session up (kazoo 2.9 and later re-raise it from start).
    An answer kazoo cannot parse crashes its connection loop instead."""
    records = LogRecords()
    log = logging.getLogger("kazoo.client")
    log.addHandler(records)
    c = KazooClient(hosts=env.hosts, timeout=10.0, connection_retry=FAST_RETRY,
                    sasl_options={"mechanism": "DIGEST-MD5", "username": "baduser", "password": "badpassword"})
    try:
        c.start_async()
        wait_for("a refused SASL login is AuthFailedError (kazoo logs AUTH_FAILED)",
                 lambda: any(m.startswith("AUTH_FAILED") for m in records.messages),
                 lambda: "; kazoo logged %r" % records.messages,
                 # A ZooKeeper without a JAAS configuration (as in these
                 # tests) answers with a null token and kazoo gives up only
                 # when its read times out, some 10-20 s later.
                 wait=45.0)
        check("a refused SASL login does not crash kazoo's connection loop",
              not any("Unhandled exception" in m for m in records.messages), "kazoo logged %r" % records.messages)
        # kazoo logs AUTH_FAILED in its connection loop before it drops
        # the connection and leaves CONNECTED: wait for that, in order.
        wait_for("a refused SASL login leaves the client without a session", lambda: not c.connected,
                 lambda: "(still connected)", wait=45.0)
    finally:
        log.removeHandler(records)
        c.stop()
        c.close()


def request_limit(env):
    """The largest request is jute.maxbuffer, 0xfffff bytes by default.

    A create's length field counts, after itself: xid and type (8), the
    path (4 + len), the data (4 + len), the open ACL (4 + 4 + 4+5 + 4+6)
    and the flags (4). One byte more and the server drops the connection.
    """
    zk, root = env.zk, env.root
    limit = 0xfffff
    path = root + "/big"
    overhead = 8 + 4 + len(path.encode()) + 4 + 27 + 4
    zk.create(path, b"x" * (limit - overhead))
    _, stat = zk.get(path)
    check_eq("a request of exactly jute.maxbuffer bytes is served", stat.dataLength, limit - overhead)
    zk.delete(path)
    session = zk.client_id[0]
    check_raises("a request one byte larger drops the connection", ConnectionLoss,
                 zk.create, path, b"x" * (limit - overhead + 1))
    wait_for("the client reconnects after the dropped request",
             lambda: zk.connected and zk.client_id[0] == session)
    check("the oversized request was not applied", zk.exists(path) is None, "node exists")


def reconnect(env):
    """A connection loss within the session timeout keeps the session.

    kazoo 2.8 does not re-register raw watches on reconnect (it fires them
    with a NONE event on connection loss); its recipes re-read instead, so
    a DataWatch must see a change made while the client was away.
    """
    zk, hosts, root = env.zk, env.hosts, env.root
    proxy = Proxy(hosts)
    c = new_client(proxy.addr)
    try:
        states = []
        c.add_listener(states.append)
        session = c.client_id[0]
        eph = c.create(root + "/rc-eph", b"", ephemeral=True)
        node = root + "/rc-data"
        zk.create(node, b"before")
        seen = queue.Queue()
        c.DataWatch(node)(lambda data, stat: seen.put(data))
        check_eq("DataWatch before the cut", next_item("DataWatch before", seen), b"before")
        raw = queue.Queue()
        c.get(node, watch=raw.put)

        proxy.cut(hold=True)
        wait_for("connection loss is SUSPENDED", lambda: KazooState.SUSPENDED in states,
                 lambda: "(states %r)" % (states,))
        zk.set(node, b"while-away")
        proxy.release()
        # kazoo marks itself connected just before telling listeners.
        wait_for("reconnects", lambda: KazooState.CONNECTED in states, lambda: "(states %r)" % (states,))
        # Only now: the DataWatch recipe re-reads on kazoo's one callback
        # thread, blocking it until the connection is back.
        ev = next_item("raw watch on connection loss", raw)
        check_eq("raw watch fires NONE on connection loss", ev.type, EventType.NONE)
        check_eq("same session after reconnect", c.client_id[0], session)
        check_eq("states", states, [KazooState.SUSPENDED, KazooState.CONNECTED])
        _, stat = zk.get(eph)
        check_eq("ephemeral survives the reconnect", stat.ephemeralOwner, session)
        check_eq("DataWatch sees the change made while away", next_item("DataWatch after", seen), b"while-away")
        c.set(node, b"after")
        check_eq("DataWatch keeps working", next_item("DataWatch after set", seen), b"after")
    finally:
        c.stop()
        c.close()
        proxy.close()
    wait_for("stop closes the session: ephemeral removed", lambda: zk.exists(root + "/rc-eph") is None)


def stop_start(env):
    """stop() ends the session; start() opens a new one."""
    zk, hosts, root = env.zk, env.hosts, env.root
    c = new_client(hosts)
    try:
        first = c.client_id[0]
        c.create(root + "/ss-eph", b"", ephemeral=True)
        c.stop()
        check("stop ends the session at once", zk.exists(root + "/ss-eph") is None, "ephemeral still there")
        c.start(timeout=WAIT)
        check("start after stop opens a new session", c.connected and c.client_id[0] != first,
              "session %r, old %r" % (c.client_id, first))
        check("the new session works", c.exists(root) is not None, "root missing")
    finally:
        c.stop()
        c.close()


def expiry(env):
    """A session that ends while its client is away is reported as LOST.

    The victim connects through a proxy that is then held, so it cannot
    reconnect; a second client attaches to the victim's session with its
    id and password and closes it; then the victim comes back.
    """
    zk, hosts, root = env.zk, env.hosts, env.root
    proxy = Proxy(hosts)
    victim = new_client(proxy.addr)
    try:
        states = []
        victim.add_listener(states.append)
        session, passwd = victim.client_id
        victim.create(root + "/exp-eph", b"", ephemeral=True)
        proxy.cut(hold=True)
        wait_for("victim is SUSPENDED", lambda: KazooState.SUSPENDED in states)

        thief = KazooClient(hosts=hosts, client_id=(session, passwd), timeout=10.0)
        thief.start(timeout=WAIT)
        check_eq("client_id reattaches to the same session", thief.client_id[0], session)
        _, stat = thief.get(root + "/exp-eph")
        check_eq("reattached session owns the ephemeral", stat.ephemeralOwner, session)
        thief.stop()
        thief.close()
        check("closing the session removes its ephemeral", zk.exists(root + "/exp-eph") is None,
              "ephemeral still there")

        proxy.release()
        wait_for("expiry is reported as LOST", lambda: KazooState.LOST in states,
                 lambda: "(states %r)" % (states,))
        wait_for("kazoo opens a new session after expiry",
                 lambda: victim.connected and victim.client_id[0] != session,
                 lambda: "(states %r, client_id %r)" % (states, victim.client_id))
        check("the new session works", victim.exists(root) is not None, "root missing")
    finally:
        victim.stop()
        victim.close()
        proxy.close()


class Env:
    """What a section gets: the server, two connected clients, and a path
    of its own to work under."""

    def __init__(self, hosts, zk, zk2, root):
        self.hosts, self.zk, self.zk2, self.root = hosts, zk, zk2, root


# Sections run in this order, each under ROOT/<name>; a failing one does
# not stop the others. expiry comes last: it is the only one that needs a
# fresh session to end.
SECTIONS = [basics, versions, watches, transactions, acls, lock, election, recipes,
            auth_digest_without_colon, auth_ip, auth_unknown_scheme, auth_sasl_invalid, request_limit, reconnect, stop_start, expiry]


def main():
    if len(sys.argv) != 3:
        print("usage: kazoo_session.py HOST:PORT ROOT", file=sys.stderr)
        return 2
    hosts, root = sys.argv[1], sys.argv[2]
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    zk = new_client(hosts)
    zk2 = new_client(hosts)
    failed = 0
    try:
        try:
            check_raises("root does not exist yet", NoNodeError, zk.get, root)
        except CheckFailed as e:
            print("FAIL " + str(e), flush=True)
            return 1
        for section in SECTIONS:
            env = Env(hosts, zk, zk2, "%s/%s" % (root, section.__name__))
            try:
                zk.ensure_path(env.root)
                section(env)
            except CheckFailed as e:
                failed += 1
                print("FAIL [%s] %s" % (section.__name__, e), flush=True)
            except Exception as e:  # noqa: BLE001 - an unexpected error fails the section
                failed += 1
                print("FAIL [%s] unexpected %s: %s" % (section.__name__, type(e).__name__, e), flush=True)
                traceback.print_exc()
    finally:
        zk2.stop()
        zk2.close()
        zk.stop()
        zk.close()
    if failed:
        return 1
    print("PASS %d checks" % checks, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
