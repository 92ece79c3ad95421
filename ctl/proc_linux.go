package ctl

import (
	"os"
	"os/exec"
	"syscall"
)

// isolate puts the command in a process group of its own, so that losing
// the lock kills everything it started, and asks the kernel to SIGKILL it
// if ctl dies first: a command must not outlive the ctl whose session
// protects it.
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends sig to the command's process group.
func signalGroup(p *os.Process, sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return p.Signal(sig)
	}
	return syscall.Kill(-p.Pid, s)
}
