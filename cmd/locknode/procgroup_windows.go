//go:build windows

package main

import (
	"fmt"
	"os/exec"
	"unsafe"

	"golang.org/x/sys/windows"
)

// procGroup is the child of `locknode lock` and everything it starts: a
// job object, so a stop reaches grandchildren too, and closing the job
// (this process exiting included) kills whatever is left.
type procGroup struct{ job windows.Handle }

func prepareGroup(*exec.Cmd) {}

// startedGroup puts the started cmd into a new job object. A grandchild
// started between Start and the assignment escapes the job; the child
// is the one the lock's deadline is enforced on.
func startedGroup(cmd *exec.Cmd) (*procGroup, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return nil, fmt.Errorf("job object limits: %w", err)
	}
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
	if err != nil {
		windows.CloseHandle(job)
		return nil, fmt.Errorf("open child process: %w", err)
	}
	defer windows.CloseHandle(p)
	if err := windows.AssignProcessToJobObject(job, p); err != nil {
		windows.CloseHandle(job)
		return nil, fmt.Errorf("assign child to job object: %w", err)
	}
	return &procGroup{job: job}, nil
}

// terminate stops the job: Windows has no SIGTERM for arbitrary
// processes, so the grace period does not apply.
func (g *procGroup) terminate() { _ = windows.TerminateJobObject(g.job, 1) }

func (g *procGroup) kill() { _ = windows.TerminateJobObject(g.job, 1) }

func (g *procGroup) close() { _ = windows.CloseHandle(g.job) }
