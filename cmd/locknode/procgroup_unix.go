//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// procGroup is the child of `locknode lock` and everything it starts: a
// process group, so a stop reaches grandchildren too.
type procGroup struct{ pgid int }

// prepareGroup makes cmd start in a process group of its own.
func prepareGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// startedGroup returns the group of the started cmd.
func startedGroup(cmd *exec.Cmd) (*procGroup, error) { return &procGroup{pgid: cmd.Process.Pid}, nil }

// terminate asks the group to stop (SIGTERM).
func (g *procGroup) terminate() { _ = syscall.Kill(-g.pgid, syscall.SIGTERM) }

// kill stops the group at once (SIGKILL).
func (g *procGroup) kill() { _ = syscall.Kill(-g.pgid, syscall.SIGKILL) }

func (g *procGroup) close() {}
