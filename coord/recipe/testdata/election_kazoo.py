"""election_kazoo is one kazoo Election candidate for the interoperability
tests of coord/recipe's Election: the Go test starts it with
/usr/bin/python3 (the interpreter that has kazoo), sends one command per
line on stdin and reads one answer per line on stdout.

    /usr/bin/python3 election_kazoo.py <hosts> <session timeout, seconds>

Answers "ready" once connected. Commands and answers:
    elect <path> <id>    -> elected        Election(path, id).run(lead) in a
                                           thread; "elected" when lead is called
    contenders <path>    -> contenders <id,id,...>   Election(path).contenders()
    resign               -> resigned       lead returns; the election is left
Errors are answered "error <message>"; the test fails on them. The test
kills the process with SIGKILL to see another candidate take over.
"""
import sys
import threading

from kazoo.client import KazooClient


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main():
    zk = KazooClient(hosts=sys.argv[1], timeout=float(sys.argv[2]))
    zk.start(timeout=30)
    say("ready")
    resign = threading.Event()
    done = threading.Event()
    for line in sys.stdin:
        f = line.split()
        if not f:
            continue
        try:
            if f[0] == "elect":
                election = zk.Election(f[1], f[2])

                def lead():
                    say("elected")
                    resign.wait()

                def run():
                    election.run(lead)
                    done.set()

                threading.Thread(target=run, daemon=True).start()
            elif f[0] == "contenders":
                say("contenders " + ",".join(zk.Election(f[1]).contenders()))
            elif f[0] == "resign":
                resign.set()
                done.wait(30)
                say("resigned")
            else:
                say("error unknown command " + f[0])
        except Exception as e:  # the test reads the error and fails
            say("error %r" % (e,))
    zk.stop()
    zk.close()


if __name__ == "__main__":
    main()
