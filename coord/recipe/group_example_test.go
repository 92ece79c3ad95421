package recipe

import (
	"context"
	"fmt"
	"log"
	"time"
)

// Group membership: each collector registers itself; the assigner
// follows the live member list.
func ExampleJoin() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Dial(ctx, exampleConnect("group"), Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	live, err := WatchGroup(ctx, s, "/logs/live")
	if err != nil {
		log.Fatal(err)
	}
	defer live.Close()

	me, err := Join(ctx, s, "/logs/live", "collector-1", []byte("10.0.0.1"))
	if err != nil {
		log.Fatal(err)
	}
	for range live.Changes() {
		if ms := live.Members(); len(ms) == 1 {
			fmt.Printf("%s at %s\n", ms[0].Name, ms[0].Data)
			break
		}
	}
	if err := me.Leave(ctx); err != nil {
		log.Fatal(err)
	}
	for range live.Changes() {
		if len(live.Members()) == 0 {
			fmt.Println("no collector left")
			break
		}
	}
	// Output:
	// collector-1 at 10.0.0.1
	// no collector left
}
