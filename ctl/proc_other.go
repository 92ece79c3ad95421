//go:build !unix

package ctl

import (
	"os"
	"os/exec"
)

// isolate does nothing where there are no process groups.
func isolate(*exec.Cmd) {}

// signalGroup sends sig to the command alone.
func signalGroup(p *os.Process, sig os.Signal) error { return p.Signal(sig) }
