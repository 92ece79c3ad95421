package core

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The crash tests run `shepherd core` as a child process, to kill it with
// SIGKILL. The binary is built once per test binary, on first use.
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
	out  []byte
}

// shepherdBinary returns the path of a freshly built shepherd binary.
func shepherdBinary(t testing.TB) string {
	t.Helper()
	binary.once.Do(func() {
		binary.dir, binary.err = os.MkdirTemp("", "core-bin-")
		if binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "shepherd")
		cmd := exec.Command("go", "build", "-o", binary.path, "github.com/shepherd-dev/shepherd/cmd/shepherd")
		binary.out, binary.err = cmd.CombinedOutput()
	})
	if binary.err != nil {
		t.Fatalf("go build ./cmd/shepherd: %v\n%s", binary.err, binary.out)
	}
	return binary.path
}

func removeBinary() {
	if binary.dir != "" {
		os.RemoveAll(binary.dir)
	}
}
