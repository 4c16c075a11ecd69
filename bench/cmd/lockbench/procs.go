package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one server process the harness started, in its own process
// group so that stopping it also stops anything it forked.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{} // closed when the process has exited
	err  error         // exit error, valid after done
}

// procs tracks every live process so that the harness stops all of them on
// any exit path (return, error, SIGINT).
var procs = struct {
	sync.Mutex
	live map[*proc]bool
}{live: map[*proc]bool{}}

// startProc starts argv with its output in logPath. stdoutLines, when
// non-nil, also receives every stdout line (it is closed at EOF).
func startProc(name, logPath string, argv []string, env []string, stdoutLines chan<- string) (*proc, error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	// Own process group (kill -- -pgid), and SIGKILL if the harness dies
	// without cleaning up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = lf
	var pr io.ReadCloser
	if stdoutLines != nil {
		if pr, err = cmd.StdoutPipe(); err != nil {
			lf.Close()
			return nil, err
		}
	} else {
		cmd.Stdout = lf
	}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: lf, done: make(chan struct{})}
	procs.Lock()
	procs.live[p] = true
	procs.Unlock()
	if pr != nil {
		// Ends at EOF of the child's stdout, i.e. when the child exits.
		go func() {
			defer close(stdoutLines)
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				fmt.Fprintln(lf, sc.Text())
				select {
				case stdoutLines <- sc.Text():
				default: // nobody listens any more
				}
			}
		}()
	}
	// Ends when the process exits (reaped here, once).
	go func() {
		p.err = cmd.Wait()
		close(p.done)
		procs.Lock()
		delete(procs.live, p)
		procs.Unlock()
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// kill sends sig to the whole process group and, for SIGKILL, waits for
// the exit. For SIGTERM it waits up to grace, then SIGKILLs.
func (p *proc) kill(sig syscall.Signal, grace time.Duration) {
	_ = syscall.Kill(-p.pid(), sig)
	if sig != syscall.SIGKILL {
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		}
	}
	<-p.done
	p.log.Close()
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// killAll stops every process still running (at exit).
func killAll() {
	procs.Lock()
	var all []*proc
	for p := range procs.live {
		all = append(all, p)
	}
	procs.Unlock()
	for _, p := range all {
		p.kill(syscall.SIGKILL, 0)
	}
}

// freePorts returns n distinct free loopback ports. They are closed before
// use, so another process could take one in between; the servers then
// fail to start and the harness reports it.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	var out []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// waitFor polls cond until it returns nil or ctx/timeout ends: every 20ms
// at first, backing off to every 200ms (a status call on a node holding a
// million locks is not free).
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) error) error {
	return waitEvery(ctx, timeout, 200*time.Millisecond, what, cond)
}

// waitEvery is waitFor with the longest poll interval given (20ms: poll
// steadily, for measuring how long something takes).
func waitEvery(ctx context.Context, timeout, maxEvery time.Duration, what string, cond func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	every := 20 * time.Millisecond
	for {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		last = cond(cctx)
		ccancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not ready after %v: %w", what, timeout, last)
		case <-time.After(every):
			every = min(every*5/4, maxEvery)
		}
	}
}

// rssBytes reads VmRSS of pid from /proc: the resident set now.
func rssBytes(pid int) (int64, error) { return procStatusBytes(pid, "VmRSS") }

// peakRSSBytes reads VmHWM of pid from /proc: the largest resident set
// the process has had, so a transient peak between two samples (a
// snapshot being written, a restore) is not missed.
func peakRSSBytes(pid int) (int64, error) { return procStatusBytes(pid, "VmHWM") }

// procStatusBytes reads one "<field>: N kB" line of /proc/<pid>/status.
func procStatusBytes(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseStatusKB(string(b), field)
}

// parseStatusKB finds "<field>: N kB" in a /proc status text.
func parseStatusKB(status, field string) (int64, error) {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024, err
			}
		}
	}
	return 0, fmt.Errorf("no %s", field)
}

// ensureBinary finds bin on PATH (or at its absolute path); when missing
// and running as root it installs pkg with apt-get. It returns a reason
// to skip the backend when the binary stays missing.
func ensureBinary(bin, pkg string, install bool) (string, error) {
	if p, err := exec.LookPath(bin); err == nil {
		return p, nil
	}
	if !install {
		return "", fmt.Errorf("%s not found; install the Debian package %s (apt-get install -y %s) or run as root", bin, pkg, pkg)
	}
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("%s not found and not root: install the Debian package %s (apt-get install -y %s)", bin, pkg, pkg)
	}
	logf("installing %s with apt-get", pkg)
	run := func(args ...string) error {
		c := exec.Command("apt-get", args...)
		c.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := c.CombinedOutput()
		if err != nil {
			return fmt.Errorf("apt-get %s: %w: %s", strings.Join(args, " "), err, tail(string(out), 400))
		}
		return nil
	}
	if err := run("install", "-y", pkg); err != nil {
		if err2 := run("update"); err2 != nil {
			return "", err2
		}
		if err := run("install", "-y", pkg); err != nil {
			return "", err
		}
	}
	// Debian's etcd-server package may start a system service; the
	// harness starts its own servers on free ports, so that one is left
	// alone (it is not ours to stop).
	if p, err := exec.LookPath(bin); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s still missing after installing %s", bin, pkg)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// dirSize is the total size of the regular files under dir.
func dirSize(dir string) int64 {
	n, _, _ := dirUsage(dir)
	return n
}

// dirUsage walks dir and returns the regular files' total apparent size,
// the bytes they occupy on disk (allocated blocks: a sparse or
// preallocated file differs from its size) and how many there are.
// A directory that does not exist is 0, 0, 0.
func dirUsage(dir string) (size, disk int64, files int) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, 0
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() {
			s, d, f := dirUsage(p)
			size, disk, files = size+s, disk+d, files+f
			continue
		}
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		size += fi.Size()
		disk += allocated(fi)
		files++
	}
	return size, disk, files
}

// allocated is the bytes a file occupies on disk (st_blocks × 512), its
// apparent size where the platform does not say.
func allocated(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}
