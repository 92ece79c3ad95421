package recipe

import (
	"context"
	"fmt"
	"os"
	"time"
)

// The fault tests kill lock holders with SIGKILL. The holder is this test
// binary re-executed with helperEnv set: runHelper, called first thing by
// TestMain, then acts the holder instead of running tests.
const helperEnv = "RECIPE_TEST_HELPER"

// runHelper runs the helper role named by helperEnv, if any, and reports
// whether it did (the process must then exit without running tests).
//
// Role "mutex": dial RECIPE_ADDR with RECIPE_TIMEOUT, lock the Mutex at
// RECIPE_PATH, print "locked <node>" and wait to be killed.
func runHelper() bool {
	role := os.Getenv(helperEnv)
	if role == "" {
		return false
	}
	if err := helperMain(role); err != nil {
		fmt.Fprintf(os.Stderr, "helper %s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

func helperMain(role string) error {
	timeout, err := time.ParseDuration(os.Getenv("RECIPE_TIMEOUT"))
	if err != nil {
		return fmt.Errorf("RECIPE_TIMEOUT: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Dial(ctx, os.Getenv("RECIPE_ADDR"), Options{SessionTimeout: timeout})
	if err != nil {
		return err
	}
	switch role {
	case "mutex":
		m := NewMutex(s, os.Getenv("RECIPE_PATH"))
		if err := m.Lock(ctx); err != nil {
			return err
		}
		fmt.Printf("locked %s\n", m.Node())
	default:
		return fmt.Errorf("unknown role %q", role)
	}
	select {} // until SIGKILL
}
