package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/internal/tlsutil"
	"github.com/locknode/locknode/server"
	"github.com/locknode/locknode/transport"
)

func init() { addCommand(newDevCmd) }

// devState remembers a dev cluster's raft addresses in its data
// directory: raft stores member addresses, so a restart must reuse them.
type devState struct {
	Raft []string `json:"raft"`
}

const devStateFile = "dev-cluster.json"

func newDevCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev [flags]",
		Short: "run an N-node cluster in this process on loopback (make run)",
		Long: `Run a whole cluster in one process, for development and tests. It prints a line
per node as it comes up (its HTTP, RESP and raft addresses) and "ready" once a
leader is elected; Ctrl-C stops it. Without --data the cluster lives in a
temporary directory removed on exit.`,
		Example: `  locknode dev
  locknode dev --nodes 5 --data ./dev-data --http-base-port 8080 --resp-base-port 6379
  locknode dev --tls --data ./dev-data   # prints how to connect with the throwaway CA`,
		Annotations: map[string]string{annExitCodes: `  0    stopped by SIGINT or SIGTERM
  1    the cluster could not start (data directory, listeners, no leader within 30s)
  2    bad command line (the reason is printed first)
`},
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	nodes := fs.Int("nodes", 3, "number of nodes")
	data := fs.String("data", "", "data directory, reusable across runs (default: a temporary directory, removed on exit)")
	// Not LOCKNODE_DATA, which names a serve node's directory (a
	// container's /data): dev lays out a directory of its own.
	ownEnv(fs, "data", "LOCKNODE_DEV_DATA")
	host := fs.String("host", "127.0.0.1", "address to listen on")
	httpBase := fs.Int("http-base-port", 0, "HTTP port of the first node, the others follow (0: any free port)")
	respBase := fs.Int("resp-base-port", 0, "RESP port of the first node, the others follow (0: any free port)")
	raftBase := fs.Int("raft-base-port", 0, "raft port of the first node, the others follow (0: any free port; with --data, the first run's ports are reused)")
	logLevel := fs.String("log-level", "warn", "log level (trace, debug, info, warn, error, off)")
	logFormat := fs.String("log-format", envDefault("LOCKNODE_LOG_FORMAT", "text"), logFormatUsage)
	mirrorURL := fs.String("mirror", "", "mirror the lock table into this Redis: redis://[:password@]host:port[/db][?key_prefix=...&filter=...] (every node runs a mirror, the leader's writes)")
	respClusterDef, _ := strconv.ParseBool(envDefault("LOCKNODE_RESP_CLUSTER", "false"))
	respCluster := fs.Bool("resp-cluster", respClusterDef, "answer Redis Cluster clients: one shard owning every slot, mastered by the raft leader (default: off, a standalone Redis)")
	pprofAddr := fs.String("pprof", "", "serve net/http/pprof on this host:port, its own listener (default: off)")
	maxMem := fs.String("max-memory", envDefault("LOCKNODE_MAX_MEMORY", ""), maxMemoryUsage+" (each node's key space)")
	memLimit := fs.String("memory-limit", envDefault("LOCKNODE_MEMORY_LIMIT", ""), memoryLimitUsage+" (for the whole process, all nodes)")
	gcPct := fs.String("gc-percent", envDefault("LOCKNODE_GC_PERCENT", ""), gcPercentUsage+" (for the whole process, all nodes)")
	reqLimits := addLimitFlags(fs)
	dashFlags := addDashboardFlags(fs)
	scripts := addScriptFlags(fs)
	scriptLim := addScriptLimitFlags(fs)
	limitFlags := addNetLimitFlags(fs)
	useTLS := fs.Bool("tls", false, "make a throwaway CA and node certificates in DATA/tls (kept with --data), serve HTTP and RESP over TLS and use mutual TLS between the nodes")
	usersFile := fs.String("users", envDefault("LOCKNODE_USERS", ""), "users file (Redis ACL syntax) every node checks requests against; re-read on SIGHUP (default: open); the peer ports then use mutual TLS with a throwaway CA in DATA/tls, as with a --host beyond loopback")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, stdout, stderr := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		return exitWith(func() int {
			limits, err := limitFlags.parse()
			if err != nil {
				fmt.Fprintln(stderr, "locknode dev:", err)
				return 2
			}
			limits.RESP.Cluster = *respCluster
			if *nodes < 1 || *nodes > 9 {
				fmt.Fprintln(stderr, "locknode dev: --nodes must be in [1, 9]")
				return 2
			}
			fsmCfg := cluster.DefaultConfig().FSM
			if err := dashFlags.apply(&cluster.Config{}); err != nil {
				fmt.Fprintln(stderr, "locknode dev:", err)
				return 2
			}
			if err := reqLimits.apply(&fsmCfg); err != nil {
				fmt.Fprintln(stderr, "locknode dev:", err)
				return 2
			}
			logOpts, err := loggerOptions(stderr, *logLevel, *logFormat)
			if err != nil {
				fmt.Fprintln(stderr, "locknode dev:", err)
				return 2
			}
			quiet := &devQuiet{}
			if logOpts.Level > hclog.Debug {
				logOpts.Exclude = quiet.exclude
			}
			log := hclog.New(logOpts)
			fitFDLimit(&limits, *nodes, log, log.Info) // every node shares the process's limit
			mirror, err := parseMirrorFlag(*mirrorURL)
			if err != nil {
				fmt.Fprintln(stderr, "locknode dev: --mirror:", err)
				return 2
			}
			if err := scripts.apply(&fsmCfg); err != nil {
				fmt.Fprintln(stderr, "locknode dev:", err)
				return 2
			}
			maxMemory, err := parseMaxMemory(*maxMem)
			if err != nil {
				fmt.Fprintln(stderr, "locknode dev: --max-memory:", err)
				return 2
			}
			memPlan, gcPlan, ok := planRuntime("locknode dev", stderr, *pprofAddr, *memLimit, *gcPct)
			if !ok {
				return 2
			}
			if err := scriptLim.apply(&fsmCfg); err != nil {
				fmt.Fprintln(stderr, "locknode dev:", err)
				return 2
			}
			audit := auth.NewAudit(log.Named("audit"))
			var users *auth.Store
			if *usersFile != "" {
				if users, err = auth.NewStore(*usersFile, audit); err != nil {
					fmt.Fprintln(stderr, "locknode dev: --users:", err)
					return 2
				}
			}
			memPlan.Apply(log)
			gcPlan.Apply(log)
			// dev starts the tuner at once: its nodes share one heap and start
			// one after another, so there is no single restore to wait for.
			stopGCTuner := gcPlan.StartTuner()
			defer stopGCTuner()
			if *pprofAddr != "" {
				pp, err := startPprof(*pprofAddr, log)
				if err != nil {
					fmt.Fprintln(stderr, "locknode dev: --pprof:", err)
					return 1
				}
				defer pp.Close()
			}
			dir := *data
			if dir == "" {
				if dir, err = os.MkdirTemp("", "locknode-dev-"); err != nil {
					fmt.Fprintln(stderr, "locknode dev:", err)
					return 1
				}
				defer os.RemoveAll(dir)
			} else if err := os.MkdirAll(dir, 0o700); err != nil {
				fmt.Fprintln(stderr, "locknode dev: --data:", err)
				return 1
			}
			port := func(base, i int) string {
				if base == 0 {
					return net.JoinHostPort(*host, "0")
				}
				return net.JoinHostPort(*host, strconv.Itoa(base+i))
			}

			// Raft addresses: remembered ones on a restart, else fresh.
			var st devState
			statePath := filepath.Join(dir, devStateFile)
			if b, err := os.ReadFile(statePath); err == nil {
				if err := json.Unmarshal(b, &st); err != nil || len(st.Raft) != *nodes {
					fmt.Fprintf(stderr, "locknode dev: %s does not describe a %d-node cluster; use another --data\n", statePath, *nodes)
					return 1
				}
			} else if !errors.Is(err, os.ErrNotExist) {
				fmt.Fprintln(stderr, "locknode dev:", err)
				return 1
			}
			ids := make([]string, *nodes)
			for i := range ids {
				ids[i] = fmt.Sprintf("n%d", i+1)
			}
			// Per node: the HTTP/RESP server config and the peer configs.
			clientTLS := make([]*tls.Config, *nodes)
			peerTLS := make([][2]*tls.Config, *nodes)
			var dt *devTLS
			var reloads []reloadFunc
			// The peer ports get mutual TLS with --tls, and also when the
			// users file guards the client ports or they listen beyond
			// loopback: an open peer port would let anyone past both.
			peerOnly := !*useTLS && (users != nil || beyondLoopback(net.JoinHostPort(*host, "0")))
			if *useTLS || peerOnly {
				if dt, err = makeDevTLS(dir, *host, ids); err != nil {
					fmt.Fprintln(stderr, "locknode dev: peer TLS:", err)
					return 1
				}
				ca, err := tlsutil.LoadCAPool(dt.caFile)
				if err != nil {
					fmt.Fprintln(stderr, "locknode dev: peer TLS:", err)
					return 1
				}
				for i, id := range ids {
					kp, err := tlsutil.NewKeyPair(dt.nodes[id][0], dt.nodes[id][1])
					if err != nil {
						fmt.Fprintln(stderr, "locknode dev: peer TLS:", err)
						return 1
					}
					if !peerOnly {
						clientTLS[i] = tlsutil.ServerConfig(kp, nil)
					}
					peerTLS[i][0], peerTLS[i][1] = tlsutil.PeerConfigs(kp, ca)
					reloads = append(reloads, reloadFunc{id + " tls certificate", kp.Reload})
				}
			}
			if users != nil {
				reloads = append(reloads, reloadFunc{"users", users.Reload})
			}
			stopReload := watchSIGHUP(log, reloads)
			defer stopReload()
			trs := make([]*transport.Transport, *nodes)
			peers := make([]cluster.Peer, *nodes)
			for i := range trs {
				bind := port(*raftBase, i)
				if st.Raft != nil {
					bind = st.Raft[i]
				}
				tr, err := transport.New(transport.Config{
					BindAddr:         bind,
					Logger:           log.Named("transport"),
					HandshakeTimeout: limits.PeerHandshakeTimeout,
					MaxConns:         limits.PeerMaxConns,
					ServerTLS:        peerTLS[i][0],
					ClientTLS:        peerTLS[i][1],
				})
				if err != nil {
					fmt.Fprintf(stderr, "locknode dev: raft listener %s: %v\n", bind, err)
					for _, t := range trs[:i] {
						t.Close()
					}
					return 1
				}
				trs[i] = tr
				peers[i] = cluster.Peer{ID: ids[i], Addr: tr.Addr().String()}
			}
			if st.Raft == nil {
				for _, p := range peers {
					st.Raft = append(st.Raft, p.Addr)
				}
				b, _ := json.Marshal(st)
				if err := os.WriteFile(statePath, b, 0o644); err != nil {
					fmt.Fprintln(stderr, "locknode dev:", err)
					return 1
				}
			}

			procs := make([]*server.Server, 0, *nodes)
			defer func() {
				quiet.phase.Store(devStopping)
				// The whole cluster stops: no leadership hand-over, the
				// leader first so no follower campaigns meanwhile.
				for i, p := range procs {
					if p.Node().IsLeader() {
						procs[0], procs[i] = procs[i], procs[0]
					}
				}
				// Requests in flight (a blocking acquire waits up to
				// minutes) end first, while every node still runs, so
				// their waits leave the queues through the log and the
				// servers stop at once; only then do the nodes go.
				for _, p := range procs {
					p.CancelRequests()
				}
				for _, p := range procs {
					p.StopServers()
				}
				for _, p := range procs {
					if err := p.Node().Kill(); err != nil {
						fmt.Fprintf(stderr, "locknode dev: stopping %s: %v\n", p.Node().ID(), err)
					}
				}
				if len(procs) > 0 {
					fmt.Fprintln(stderr, "locknode dev: stopped")
				}
			}()
			fmt.Fprintf(stderr, "locknode dev: starting %d nodes, data in %s\n", *nodes, dir)
			for i := range peers {
				cfg := cluster.DefaultConfig()
				cfg.ID = peers[i].ID
				cfg.DataDir = filepath.Join(dir, peers[i].ID)
				cfg.Transport = trs[i]
				cfg.Bootstrap = true
				cfg.Peers = peers
				cfg.Logger = log.With("node", peers[i].ID)
				cfg.FSM = fsmCfg
				cfg.FSM.MaxMemory = maxMemory
				cfg.Audit = audit
				// The process owns its heap (cluster.Config.FreeMemoryAfterSnapshot).
				cfg.FreeMemoryAfterSnapshot = true
				_ = dashFlags.apply(&cfg) // checked before any node started
				version, commit := buildVersion()
				p, err := server.Start(ctx, server.Config{
					Cluster:      cfg,
					HTTPAddr:     port(*httpBase, i),
					RESPAddr:     port(*respBase, i),
					Logger:       cfg.Logger,
					Mirror:       mirror,
					HTTP:         limits.HTTP,
					RESP:         limits.RESP,
					AuthThrottle: limits.AuthThrottle,
					TLS:          clientTLS[i],
					Users:        users,
					Audit:        audit,
					Version:      version,
					Commit:       commit,
				})
				if err != nil {
					fmt.Fprintf(stderr, "locknode dev: node %s: %v\n", cfg.ID, err)
					for _, t := range trs[i:] {
						t.Close()
					}
					return 1
				}
				procs = append(procs, p)
				fmt.Fprintf(stdout, "node %s http=%s resp=%s raft=%s\n", cfg.ID, p.HTTPAddr(), p.RESPAddr(), peers[i].Addr)
			}

			fmt.Fprintln(stderr, "locknode dev: electing a leader")
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			for _, p := range procs {
				if err := p.Node().WaitLeader(wctx); err != nil {
					fmt.Fprintf(stderr, "locknode dev: no leader: %v\n", err)
					return 1
				}
			}
			quiet.phase.Store(devRunning)
			fmt.Fprintln(stdout, "ready")
			if *useTLS || users != nil {
				printDevConnect(stdout, dt, *useTLS, *usersFile, users, procs[0])
			}
			<-ctx.Done()
			fmt.Fprintln(stderr, "locknode dev: stopping")
			return 0
		}())
	}
	return cmd
}

// devAddrs are a node's client addresses (a *server.Server).
type devAddrs interface {
	HTTPAddr() string
	RESPAddr() string
}

// printDevConnect tells how to reach a `dev --tls` or `dev --users`
// cluster: with the throwaway CA, and with a user's credentials, which
// dev cannot know (a users file may hold only hashes), so the commands
// read them from LOCKNODE_USER and LOCKNODE_PASSWORD, the variables the
// CLI itself reads.
func printDevConnect(w io.Writer, dt *devTLS, useTLS bool, usersFile string, users *auth.Store, p devAddrs) {
	rh, rp, _ := net.SplitHostPort(p.RESPAddr())
	scheme, curlTLS, redisTLS, cliTLS := "http", "", "", ""
	if useTLS {
		fmt.Fprintf(w, "tls: HTTP and RESP over TLS, mutual TLS between nodes; CA certificate %s\n", dt.caFile)
		scheme = "https"
		curlTLS = " --cacert " + dt.caFile
		redisTLS = " --tls --cacert " + dt.caFile
		cliTLS = " --cacert " + dt.caFile
	}
	curlAuth, redisAuth := "", ""
	if users != nil {
		fmt.Fprintf(w, "users: every request authenticates against %s (users: %s); set LOCKNODE_USER and LOCKNODE_PASSWORD to one of them\n",
			usersFile, strings.Join(users.Users().Names(), ", "))
		curlAuth = ` -u "$LOCKNODE_USER:$LOCKNODE_PASSWORD"`
		redisAuth = `REDISCLI_AUTH="$LOCKNODE_PASSWORD" `
	}
	redisUser := ""
	if users != nil {
		redisUser = ` --user "$LOCKNODE_USER"`
	}
	fmt.Fprintf(w, "  curl%s%s %s://%s/v1/status\n", curlTLS, curlAuth, scheme, p.HTTPAddr())
	fmt.Fprintf(w, "  %sredis-cli%s%s -h %s -p %s PING\n", redisAuth, redisTLS, redisUser, rh, rp)
	fmt.Fprintf(w, "  locknode status%s --endpoints %s://%s\n", cliTLS, scheme, p.HTTPAddr())
}
