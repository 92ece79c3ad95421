"""kazoo_peer drives kazoo's Lock and Election for the interoperability
tests of coord/recipe: the Go test starts it with /usr/bin/python3, writes
one command per line on its stdin and reads one answer per line on stdout.

    /usr/bin/python3 kazoo_peer.py <hosts>

Commands and answers:
    lock <path>                 -> locked     Lock(path)
    unlock                      -> unlocked
    elect <path>                -> elected    Election(path).run(...) in a thread;
                                              "elected" is printed when it leads
    resign                      -> resigned   the leader's function returns
    contend <path> <n> <guard>  -> contended <n> <violations>
        n rounds of: acquire Lock(path, extra_lock_patterns=["-lock-"]),
        which also sees Curator-named contenders; create the ephemeral guard node,
        which fails if anybody else is inside; hold a few ms; delete it;
        release.
    exit
Errors are answered "error <message>"; the test fails on them.

Lock and Election see only kazoo-named contenders, as the Go side names
them with KazooNaming; contend sees Curator-named ones (Go's default) too.
"""
import random
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError

CURATOR_PATTERNS = ["-lock-"]


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main():
    zk = KazooClient(hosts=sys.argv[1], timeout=8.0)
    zk.start(timeout=30)
    say("ready")
    lock = None
    resign = threading.Event()
    for line in sys.stdin:
        f = line.split()
        if not f:
            continue
        try:
            cmd = f[0]
            if cmd == "lock":
                lock = zk.Lock(f[1], "python")
                lock.acquire()
                say("locked")
            elif cmd == "unlock":
                lock.release()
                say("unlocked")
            elif cmd == "elect":
                election = zk.Election(f[1], "python")
                resign.clear()

                def lead():
                    say("elected")
                    resign.wait()

                threading.Thread(target=election.run, args=(lead,), daemon=True).start()
            elif cmd == "resign":
                resign.set()
                say("resigned")
            elif cmd == "contend":
                path, n, guard = f[1], int(f[2]), f[3]
                m = zk.Lock(path, "python", extra_lock_patterns=CURATOR_PATTERNS)
                violations = 0
                for _ in range(n):
                    with m:
                        try:
                            zk.create(guard, ephemeral=True)
                            time.sleep(random.random() * 0.005)
                            zk.delete(guard)
                        except NodeExistsError:
                            violations += 1
                say("contended %d %d" % (n, violations))
            elif cmd == "exit":
                break
            else:
                say("error unknown command " + cmd)
        except Exception as e:  # the test reads the error and fails
            say("error %r" % (e,))
    zk.stop()
    zk.close()


if __name__ == "__main__":
    main()
