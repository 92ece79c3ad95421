//go:build unix

package realclients

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup puts cmd's process, and everything it starts, in a new
// process group, and makes cancelling cmd kill the whole group. zkCli.sh
// is a shell script that runs java as a child: killing only the shell
// would leave the JVM holding the output pipe open.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
