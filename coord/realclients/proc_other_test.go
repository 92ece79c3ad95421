//go:build !unix

package realclients

import "os/exec"

// ownProcessGroup has no process groups to use here; cancelling cmd kills
// its process only.
func ownProcessGroup(cmd *exec.Cmd) {}
