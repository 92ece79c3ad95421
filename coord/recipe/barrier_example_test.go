package recipe

import (
	"context"
	"fmt"
	"log"
	"sync"
)

// The barrier of the source documents: /queue_barrier holds n, each
// participant waits until n have arrived.
func ExampleBarrier() {
	ctx := context.Background()
	s, err := Dial(ctx, exampleConnect("barrier"), Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	if err := CreateBarrier(ctx, s, "/queue_barrier", 3); err != nil {
		log.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, host := range []string{"192.168.0.1", "192.168.0.2", "192.168.0.3"} {
		wg.Add(1)
		go func() { // in real life, one process per host
			defer wg.Done()
			if err := NewBarrier(s, "/queue_barrier", host).Wait(ctx); err != nil {
				log.Fatal(err)
			}
		}()
	}
	wg.Wait()
	fmt.Println("all 3 arrived")
	// Output:
	// all 3 arrived
}

// A double barrier: a computation starts when all workers have entered
// and ends when all have left.
func ExampleDoubleBarrier() {
	ctx := context.Background()
	s, err := Dial(ctx, exampleConnect("double-barrier"), Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	var mu sync.Mutex
	computed := 0
	var wg sync.WaitGroup
	for i := range 2 {
		b := NewDoubleBarrier(s, "/jobs/merge/barrier", 2, fmt.Sprint("worker-", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.Enter(ctx); err != nil {
				log.Fatal(err)
			}
			mu.Lock()
			computed++
			mu.Unlock()
			if err := b.Leave(ctx); err != nil {
				log.Fatal(err)
			}
		}()
	}
	wg.Wait()
	fmt.Println("computed by", computed, "workers")
	// Output:
	// computed by 2 workers
}
