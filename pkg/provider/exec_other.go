//go:build !unix

package provider

import "os/exec"

// inOwnProcessGroup: without process groups, a timeout kills the provider itself
// (exec.CommandContext's default); WaitDelay still bounds its children's hold on the
// output.
func inOwnProcessGroup(*exec.Cmd) {}

// killProcessGroup kills the provider itself.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
