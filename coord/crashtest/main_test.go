package crashtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// shepherdBin is the server binary under test, built by TestMain.
var shepherdBin string

// shepherdPkg is the command the tests build and run.
const shepherdPkg = "github.com/shepherd-dev/shepherd/cmd/shepherd"

// TestMain builds the shepherd binary once for every test in the package:
// the tests crash real processes, which an in-process server cannot imitate
// (a SIGKILL takes the page cache's view of the files with it, nothing
// else).
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "shepherd-crashtest-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "crashtest: temp dir for the server binary: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	shepherdBin, err = buildShepherd(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crashtest: %v\n", err)
		return 1
	}
	return m.Run()
}

// buildShepherd compiles the server into dir, with the race detector when
// this test binary has it.
func buildShepherd(dir string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("find the go command to build %s: %w", shepherdPkg, err)
	}
	bin := filepath.Join(dir, "shepherd")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, shepherdPkg)
	out, err := exec.Command(goTool, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go %v: %w\n%s", args, err, out)
	}
	return bin, nil
}
