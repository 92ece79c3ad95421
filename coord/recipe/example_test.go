package recipe_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/shepherd-dev/shepherd/coord/recipe"
)

// Connect to a three-server ensemble under the chroot /shepherd and follow
// the session's states.
func ExampleDial() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := recipe.Dial(ctx, "zk1:2181,zk2:2181,zk3:2181/shepherd", recipe.Options{
		SessionTimeout: 10 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	s.Listen(func(st recipe.State) {
		switch st {
		case recipe.StateSuspended:
			// Pause work that must not run twice; the session may come back.
		case recipe.StateLost:
			// Everything held through the session is gone.
		}
	})
	// Paths are relative to /shepherd.
	if err := s.EnsurePath(ctx, "/scheduler/jobs"); err != nil {
		log.Fatal(err)
	}
}

// Retry an idempotent write through connection losses.
func ExampleSession_Retry() {
	var s *recipe.Session // from Dial
	ctx := context.Background()
	err := s.Retry(ctx, func() error {
		_, err := s.Set(ctx, "/scheduler/jobs/backup", []byte(`{"version":1}`), -1)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		log.Print("no such job") // not retried: asking again gets the same answer
	}
}

// Create a sequential node that a retry after a connection loss cannot
// duplicate.
func ExampleSession_CreateProtected() {
	var s *recipe.Session // from Dial
	p, err := s.CreateProtected(context.Background(), "/queue/item-", []byte("payload"), zk.FlagSequence, nil)
	if err != nil {
		log.Fatal(err)
	}
	log.Print(p) // /queue/_c_<uuid>-item-0000000042
}

// Hold a lock while working, and stop working the moment it is lost.
func ExampleMutex() {
	var s *recipe.Session // from Dial
	ctx := context.Background()
	m := recipe.NewMutex(s, "/locks/copy_hot_item")
	if err := m.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	work, stop := context.WithCancel(ctx)
	go func() {
		<-m.Lost() // closed on Unlock too
		stop()
	}()
	runTask(work)
	if err := m.Unlock(); errors.Is(err, recipe.ErrLockLost) {
		log.Print("the lock was lost while the task ran")
	}
}

// Fence writes with the lock node: a holder that lost the lock without
// knowing it yet cannot overwrite its successor's checkpoint.
func ExampleMutex_fencing() {
	var s *recipe.Session // from Dial
	ctx := context.Background()
	m := recipe.NewMutex(s, "/locks/copy_hot_item")
	if err := m.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	defer m.Unlock()
	_, err := s.Multi(ctx,
		&zk.CheckVersionRequest{Path: m.Node(), Version: 0},
		&zk.SetDataRequest{Path: "/mysql_replicator/tasks/copy_hot_item/lastCommit", Data: []byte(`{"version":1}`), Version: -1})
	if errors.Is(err, zk.ErrNoNode) {
		log.Print("lock lost: checkpoint not written")
	}
}

// Readers share the lock; a writer waits for them and they for it.
func ExampleRWMutex() {
	var s *recipe.Session // from Dial
	ctx := context.Background()
	rw := recipe.NewRWMutex(s, "/locks/config")
	if err := rw.RLock(ctx); err != nil {
		log.Fatal(err)
	}
	readConfig()
	_ = rw.RUnlock()

	if err := rw.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	writeConfig()
	_ = rw.Unlock()
}

// Run at most three copies of a job across the cluster.
func ExampleSemaphore() {
	var s *recipe.Session // from Dial
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lease, err := recipe.NewSemaphore(s, "/semaphores/reindex", 3).Acquire(ctx)
	if err != nil {
		log.Fatal(err) // context.DeadlineExceeded: no lease within a minute
	}
	defer lease.Release()
	runTask(ctx)
}

// Take two task locks at once, or neither.
func ExampleNewMultiMutex() {
	var s *recipe.Session // from Dial
	// Taken in path order, a then b, by every process: no deadlock.
	ml := recipe.NewMultiMutex(s, "/locks/task-b", "/locks/task-a")
	if err := ml.Lock(context.Background()); err != nil {
		log.Fatal(err)
	}
	defer ml.Unlock()
	runTask(context.Background())
}

func runTask(context.Context) {}
func readConfig()             {}
func writeConfig()            {}
