package recipe

import (
	"context"
	"fmt"
	"log"
)

func ExampleQueue() {
	ctx := context.Background()
	s, err := Dial(ctx, exampleConnect("queue"), Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	q := NewQueue(s, "/queue_fifo")
	for _, job := range []string{"compress logs", "rotate keys", "send report"} {
		if _, err := q.Put(ctx, []byte(job)); err != nil {
			log.Fatal(err)
		}
	}
	for range 3 {
		job, err := q.Take(ctx) // blocks while the queue is empty
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(string(job))
	}
	// Output:
	// compress logs
	// rotate keys
	// send report
}
