package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/internal/tlsutil"
)

// Exit codes of "locknode lock" besides the child's own.
const (
	exitLockFailed  = 1  // could not talk to the cluster (no leader, unreachable), or it refused
	exitUsage       = 2  // bad command line
	exitLockBusy    = 75 // EX_TEMPFAIL: held by someone else (try, or the wait ran out)
	exitStartFailed = 127
)

// lockExitCodes ends "locknode lock --help"; keep it in step with the
// constants above.
const lockExitCodes = `  CMD's own  the lock was held and CMD ran (128+N if signal N ended it)
  1          no leader reachable (no quorum, wrong --endpoints / LOCKNODE_ENDPOINTS), or the cluster refused
  2          bad command line (the reason is printed first)
  75         the lock is held by another owner (--wait 0, or the wait ran out)
  127        CMD could not be started
`

func init() { addCommand(newLockCmd) }

// clientFlags are the flags every client subcommand shares.
type clientFlags struct {
	endpoints *string
	logLevel  *string
	// TLS: the CA that signed the nodes' certificates, and a client
	// certificate for nodes started with --tls-client-ca.
	caCert, cert, key *string
	user              *string
	password          *string
}

func addClientFlags(fs *flag.FlagSet) clientFlags {
	return clientFlags{
		endpoints: fs.String("endpoints", envDefault("LOCKNODE_ENDPOINTS", "127.0.0.1:8080"),
			"HTTP addresses of cluster nodes, comma separated; without a scheme, http:// (https:// with --cacert or --cert) (env LOCKNODE_ENDPOINTS)"),
		logLevel: fs.String("log-level", envDefault("LOCKNODE_LOG_LEVEL", "warn"), "log level (trace, debug, info, warn, error, off)"),
		caCert: fs.String("cacert", envDefault("LOCKNODE_CACERT", ""),
			"trust this CA (PEM) for https endpoints instead of the system's (env LOCKNODE_CACERT)"),
		cert: fs.String("cert", envDefault("LOCKNODE_CERT", ""),
			"client certificate (PEM) for nodes that require one, with --key (env LOCKNODE_CERT)"),
		key:  fs.String("key", envDefault("LOCKNODE_KEY", ""), "private key of --cert (PEM) (env LOCKNODE_KEY)"),
		user: fs.String("user", envDefault("LOCKNODE_USER", ""), "user name, for nodes started with --users (env LOCKNODE_USER)"),
		password: fs.String("password", envDefault("LOCKNODE_PASSWORD", ""),
			"password of --user (prefer env LOCKNODE_PASSWORD: other users of the machine can read a flag)"),
	}
}

func (f clientFlags) client(stderr io.Writer) (*client.Client, error) {
	log, err := newLogger(stderr, *f.logLevel)
	if err != nil {
		return nil, err
	}
	cfg := client.Config{Logger: log}
	scheme := "http://"
	if *f.caCert != "" || *f.cert != "" || *f.key != "" {
		if cfg.TLS, _, err = tlsutil.ClientFiles(*f.caCert, *f.cert, *f.key); err != nil {
			return nil, err
		}
		scheme = "https://"
	}
	var eps []string
	for _, e := range splitEndpoints(*f.endpoints) {
		if !strings.Contains(e, "://") {
			e = scheme + e
		}
		eps = append(eps, e)
	}
	cfg.Endpoints = eps
	cfg.Username, cfg.Password = *f.user, *f.password
	return client.New(cfg)
}

// splitEndpoints splits a comma separated --endpoints value.
func splitEndpoints(s string) []string {
	var eps []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			eps = append(eps, e)
		}
	}
	return eps
}

// runLock acquires NAME, runs CMD in its own process group with the fence
// in LOCKNODE_FENCE while renewing the lease, and releases the lock when
// CMD exits. When the lock enters Jeopardy (renewal failing near the safe
// deadline) — or locknode gets SIGINT/SIGTERM — the group gets SIGTERM,
// then SIGKILL after --grace, and never later than the lock's safe
// deadline, so the command is gone before the lease could pass to anyone
// else. Exit code: the command's (128+signal if a signal ended it), 75 if
// the lock was busy, 1 on other errors, 2 on usage errors.
//
// The command runs in its own process group, so terminal Ctrl-C reaches
// locknode, which forwards it as SIGTERM to the whole group; the command
// cannot read the terminal (it is not the foreground group).
func newLockCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lock NAME [flags] -- CMD [ARGS...]",
		Short: "run a command while holding a lock",
		Long: `Acquire lock NAME, run CMD with its fencing token in LOCKNODE_FENCE (and the
name in LOCKNODE_LOCK) while renewing the lease, and release the lock when CMD
exits. If the lease cannot be kept (the cluster is unreachable near its safe
deadline) or locknode is interrupted, CMD's process group gets SIGTERM, then
SIGKILL after --grace and before the lease could pass to anyone else.
Flags may come before or after NAME; everything after "--" (or after the first
word past NAME) is CMD and its arguments.`,
		Example: `  locknode lock nightly-backup -- ./backup.sh --full
  locknode lock --wait 0 deploy -- make deploy        # fail at once (exit 75) if held
  locknode lock db-migrate --ttl 30s --endpoints 10.0.0.1:8080,10.0.0.2:8080 -- ./migrate
  LOCKNODE_ENDPOINTS=10.0.0.1:8080 locknode lock job -- sh -c 'echo "fence $LOCKNODE_FENCE"'
  locknode lock --shared config -- ./read-config.sh   # readers together, never with an exclusive holder
  locknode lock --permits 3 encoders -- ./encode.sh   # at most 3 at once`,
		Args:        cobra.ArbitraryArgs,
		Annotations: map[string]string{annExitCodes: lockExitCodes, annMaxArgs: "1"},
	}
	fs := cmd.Flags()
	cf := addClientFlags(fs)
	ttl := fs.Duration("ttl", 10*time.Second, "lease length; renewed every ttl/3 while CMD runs")
	wait := fs.Duration("wait", 30*time.Second, "how long to wait for the lock (0: fail at once if held)")
	grace := fs.Duration("grace", 5*time.Second, "time between SIGTERM and SIGKILL when CMD must stop (capped by the lock's safe deadline)")
	shared := fs.Bool("shared", false, "take a shared (reader) hold: shared holders run together, never with an exclusive one")
	permits := fs.Int("permits", 0, "take one of N permits of a semaphore: at most N holders at once, all using the same N (0: an exclusive lock)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ctx, stdout, stderr := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		pos, cmdArgs := splitAtDash(cmd, args)
		if len(pos) != 1 || len(cmdArgs) == 0 {
			return usageError("a lock NAME and a command after it are required, got %q", args)
		}
		if *permits < 0 {
			return usageError("--permits %d: want a positive number of permits, or 0 for an exclusive lock", *permits)
		}
		if *shared && *permits > 0 {
			return usageError("--shared and --permits exclude each other: a lock is shared or a semaphore")
		}
		opts := []client.LockOption{client.WithTTL(*ttl)}
		switch {
		case *shared:
			opts = append(opts, client.WithShared())
		case *permits > 0:
			opts = append(opts, client.WithSemaphore(*permits))
		}
		return exitWith(func() int {
			name := pos[0]
			if *ttl <= 0 || *wait < 0 || *grace < 0 {
				fmt.Fprintln(stderr, "locknode lock: --ttl must be positive, --wait and --grace not negative")
				return exitUsage
			}
			c, err := cf.client(stderr)
			if err != nil {
				fmt.Fprintln(stderr, "locknode lock:", api.ClientText(err))
				return exitUsage
			}

			var l *client.Lock
			// The client adds this process's host and pid; the command line
			// says what the hold is for.
			opts := append(opts, client.WithMetadata(commandMeta(cmdArgs, c.Limits())))
			if *wait > 0 {
				stopNotice := func() {}
				if isTerminal(stderr) {
					stopNotice = waitingNotice(ctx, c, name, stderr)
				}
				// The verdict comes within the wait and a little: a cluster
				// that does not answer must not stretch it.
				lctx, cancel := context.WithTimeout(ctx, *wait+waitVerdictGrace)
				l, err = c.Lock(lctx, name, append(opts, client.WithWait(*wait))...)
				cancel()
				stopNotice()
			} else {
				l, err = c.TryLock(ctx, name, opts...)
			}
			if err != nil {
				return lockFailure(ctx, c, name, *wait, err, stderr)
			}
			defer func() {
				// Releasing a lock in jeopardy is a courtesy (the cluster is
				// probably unreachable; the lease ends by itself): don't linger.
				timeout := 10 * time.Second
				if l.State() != client.Held {
					timeout = 2 * time.Second
				}
				uctx, cancel := context.WithTimeout(context.Background(), timeout)
				defer cancel()
				if err := l.Unlock(uctx); err != nil && l.State() != client.Lost {
					fmt.Fprintf(stderr, "locknode lock: releasing %s: %v\n", name, api.ClientText(err))
				}
			}()

			ch, err := startChild(cmdArgs, []string{
				"LOCKNODE_FENCE=" + strconv.FormatUint(l.Fence(), 10),
				"LOCKNODE_LOCK=" + name}, stdout, stderr)
			if err != nil {
				fmt.Fprintf(stderr, "locknode lock: starting %s: %v\n", cmdArgs[0], err)
				return exitStartFailed
			}
			defer ch.group.close()

			var waitErr error
			select {
			case waitErr = <-ch.exited:
			case <-l.Context().Done():
				fmt.Fprintf(stderr, "locknode lock: %s: %v; stopping %s\n", name, api.ClientText(context.Cause(l.Context())), cmdArgs[0])
				waitErr = stopGroup(ch.group, ch.exited, *grace, l.SafeDeadline())
			case <-ctx.Done():
				waitErr = stopGroup(ch.group, ch.exited, *grace, l.SafeDeadline())
			}
			return exitCode(waitErr)
		}())
	}
	return cmd
}

// splitAtDash splits a command's arguments at "--" (normalizeArgs puts
// one before the program of lock and elect): what precedes it, and the
// program with its arguments.
func splitAtDash(cmd *cobra.Command, args []string) (pos, prog []string) {
	if n := cmd.ArgsLenAtDash(); n >= 0 {
		return args[:n], args[n:]
	}
	return args, nil
}

// child is a command that `lock` and `elect` run, in a process group (a
// job object on Windows) of its own so that a stop reaches its
// descendants too.
type child struct {
	group  *procGroup
	exited chan error // the command's Wait result
}

// startChild starts cmdArgs with env added to this process's environment,
// with this process's stdin and the given stdout and stderr.
func startChild(cmdArgs, env []string, stdout, stderr io.Writer) (*child, error) {
	cmd := exec.Command(cmdArgs[0], cmdArgs[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	cmd.Env = append(os.Environ(), env...)
	prepareGroup(cmd)
	// With non-file stdout/stderr Wait also waits for the copy pipes;
	// don't let a descendant that escaped the group hold us forever.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	group, err := startedGroup(cmd)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	c := &child{group: group, exited: make(chan error, 1)}
	// Ends when the child exits (the group is SIGKILLed at worst).
	go func() { c.exited <- cmd.Wait() }()
	return c, nil
}

// stopGroup asks group to stop (SIGTERM), then kills it after grace or
// at the safe deadline, whichever is first, and returns the child's Wait
// error.
func stopGroup(group *procGroup, exited <-chan error, grace time.Duration, safe time.Time) error {
	group.terminate()
	// Leave a little room before the deadline for the kill to land.
	kill := min(grace, time.Until(safe)-20*time.Millisecond)
	t := time.NewTimer(max(kill, 0))
	defer t.Stop()
	select {
	case err := <-exited:
		group.kill() // stragglers the leader left behind
		return err
	case <-t.C:
	}
	group.kill()
	return <-exited
}

// exitCode maps a Wait error to the shell's convention.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return exitLockFailed
}
