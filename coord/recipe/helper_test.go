package recipe

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// processRoleEnv makes the test binary, re-executed, act as a process
// the fault tests kill with SIGKILL: a lock holder, an election
// candidate or a group member (see init below).
const processRoleEnv = "RECIPE_PROCESS_ROLE"

// The process dials RECIPE_ADDR with session timeout RECIPE_TIMEOUT, then
// as role "mutex" locks the Mutex at RECIPE_PATH and prints "locked
// <node>"; as role "candidate" campaigns at RECIPE_PATH as RECIPE_ID and prints
// "leader <token>"; as role "member" joins the group RECIPE_PATH as
// RECIPE_ID and prints "joined". Then it waits to be killed. It runs from
// init, before TestMain and its test servers.
func init() {
	role := os.Getenv(processRoleEnv)
	if role == "" {
		return
	}
	if err := processRole(role); err != nil {
		fmt.Fprintf(os.Stderr, "process role %s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func processRole(role string) error {
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
	path, id := os.Getenv("RECIPE_PATH"), os.Getenv("RECIPE_ID")
	switch role {
	case "mutex":
		m := NewMutex(s, path)
		if err := m.Lock(ctx); err != nil {
			return err
		}
		fmt.Printf("locked %s\n", m.Node())
	case "candidate":
		e := NewElection(s, path, id)
		if err := e.Campaign(ctx); err != nil {
			return err
		}
		fmt.Printf("leader %d\n", e.Token())
	case "member":
		if _, err := Join(ctx, s, path, id, nil); err != nil {
			return err
		}
		fmt.Println("joined")
	default:
		return fmt.Errorf("unknown role %q", role)
	}
	select {} // until SIGKILL
}

// startProcess runs this test binary as role (see processRoleEnv), and
// returns it and its first line of output.
func startProcess(t testing.TB, role, addr, path, id string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), processRoleEnv+"="+role, "RECIPE_ADDR="+addr, "RECIPE_PATH="+path,
		"RECIPE_ID="+id, "RECIPE_TIMEOUT="+faultTimeout.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case l := <-line:
		return cmd, l
	case <-time.After(30 * time.Second):
		t.Fatalf("the %s process said nothing within 30s", role)
		return nil, ""
	}
}
