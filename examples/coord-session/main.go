// Command coord-session is a small ZooKeeper client session, run by
// `make demo` against `shepherd coord`: it uses only the public
// go-zookeeper/zk client, to show that any ZooKeeper client works unchanged.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/go-zookeeper/zk"
)

func main() {
	addr := flag.String("zk", "127.0.0.1:2181", "coordination server address")
	flag.Parse()
	if err := run(*addr); err != nil {
		log.Fatalf("coord-session: %v", err)
	}
}

func step(format string, args ...any) { fmt.Printf("  - "+format+"\n", args...) }

func run(addr string) error {
	conn, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		return fmt.Errorf("connect %s: %w", addr, err)
	}
	defer conn.Close()
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	fmt.Printf("connected to %s, session %#x\n", addr, conn.SessionID())

	root := fmt.Sprintf("/demo-%d", os.Getpid())
	if _, err := conn.Create(root, []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		return fmt.Errorf("create %s: %w", root, err)
	}
	step("created %s", root)

	_, _, watch, err := conn.GetW(root)
	if err != nil {
		return err
	}
	st, err := conn.Set(root, []byte("hello, shepherd"), 0)
	if err != nil {
		return err
	}
	ev := <-watch
	step("set %s to version %d; the data watch fired: %s", root, st.Version, ev.Type)

	for i := 0; i < 3; i++ {
		p, err := conn.Create(root+"/task-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			return err
		}
		step("ephemeral sequential node %s", p)
	}
	kids, _, err := conn.Children(root)
	if err != nil {
		return err
	}
	step("children of %s: %v", root, kids)

	_, err = conn.Create(root, nil, 0, zk.WorldACL(zk.PermAll))
	if !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("second create of %s: want node exists, got %v", root, err)
	}
	step("creating %s again fails as it must: %v", root, err)

	ops := []any{
		&zk.CreateRequest{Path: root + "/a", Data: []byte("1"), Acl: zk.WorldACL(zk.PermAll)},
		&zk.SetDataRequest{Path: root, Data: []byte("multi"), Version: 1},
	}
	if _, err := conn.Multi(ops...); err != nil {
		return fmt.Errorf("multi: %w", err)
	}
	step("multi (create + versioned set) applied atomically")

	for _, k := range append(kids, "a") {
		if err := conn.Delete(root+"/"+k, -1); err != nil {
			return err
		}
	}
	if err := conn.Delete(root, -1); err != nil {
		return err
	}
	step("cleaned up %s", root)
	return nil
}
