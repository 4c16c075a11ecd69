package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/redisbridge/mirror"
	"github.com/locknode/locknode/server"
	"github.com/locknode/locknode/transport"
)

func init() { addCommand(newServeCmd) }

// envDefault returns the environment variable's value, or def, so the
// help shows the default in effect. applyEnv (cli.go) is what sets each
// flag from its variable, these included, and refuses a bad value.
func envDefault(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

// parsePeers parses "id=host:port,id=host:port".
func parsePeers(s string) ([]cluster.Peer, error) {
	if s == "" {
		return nil, nil
	}
	var out []cluster.Peer
	for _, item := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("peer %q: want id=host:port", item)
		}
		out = append(out, cluster.Peer{ID: id, Addr: addr})
	}
	return out, nil
}

// parseMirrorFlag reads a --mirror value; "" is no mirror.
func parseMirrorFlag(s string) (*mirror.Config, error) {
	if s == "" {
		return nil, nil
	}
	mc, err := mirror.ParseURL(s)
	if err != nil {
		return nil, err
	}
	return &mc, nil
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve --id ID --data DIR [flags]",
		Short: "run one node of a cluster (flags or LOCKNODE_* environment variables)",
		Long: `Run one node of a real deployment. The first node of a new cluster starts with
--bootstrap (alone, or with every initial voter in --peers); later nodes --join
through a running member, or are added with "locknode join".`,
		Example: `  # a new 3-node cluster: the same --peers on each, its own --id, addresses and
  # peer certificate (a peer port beyond loopback needs them, or --insecure-peer)
  locknode serve --id n1 --data /var/lib/locknode --bootstrap \
    --raft-addr 10.0.0.1:7000 --http-addr 10.0.0.1:8080 --resp-addr 10.0.0.1:6379 \
    --peers n1=10.0.0.1:7000,n2=10.0.0.2:7000,n3=10.0.0.3:7000 \
    --peer-tls-cert n1.crt --peer-tls-key n1.key --peer-tls-ca peers-ca.crt

  # a fourth node joins through any member: --join takes its raft address
  locknode serve --id n4 --data /var/lib/locknode --raft-addr 10.0.0.4:7000 --join 10.0.0.1:7000 \
    --peer-tls-cert n4.crt --peer-tls-key n4.key --peer-tls-ca peers-ca.crt

  # the same through the environment (systemd, containers)
  LOCKNODE_ID=n1 LOCKNODE_DATA=/data LOCKNODE_BOOTSTRAP=true locknode serve`,
		Annotations: map[string]string{annExitCodes: `  0    stopped by SIGINT or SIGTERM after a clean shutdown
  1    the node could not start (data directory, listeners, join) or close cleanly
  2    bad command line or configuration (the reason is printed first)
`},
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	f := &serveFlags{}
	f.id = fs.String("id", envDefault("LOCKNODE_ID", ""), "node id, unique in the cluster (required)")
	f.data = fs.String("data", envDefault("LOCKNODE_DATA", ""), "data directory (required)")
	f.raftAddr = fs.String("raft-addr", envDefault("LOCKNODE_RAFT_ADDR", "127.0.0.1:7000"), "raft and node-to-node listen address")
	f.advertise = fs.String("advertise", envDefault("LOCKNODE_ADVERTISE", ""), "raft address other nodes dial (default: --raft-addr)")
	f.httpAddr = fs.String("http-addr", envDefault("LOCKNODE_HTTP_ADDR", "127.0.0.1:8080"), "HTTP API and /metrics listen address")
	f.respAddr = fs.String("resp-addr", envDefault("LOCKNODE_RESP_ADDR", "127.0.0.1:6379"), "Redis protocol listen address")
	bootstrapDef, _ := strconv.ParseBool(envDefault("LOCKNODE_BOOTSTRAP", "false"))
	f.bootstrap = fs.Bool("bootstrap", bootstrapDef, "create a new cluster (with --peers, or alone) if the data directory is empty")
	f.peers = fs.String("peers", envDefault("LOCKNODE_PEERS", ""), "initial voters for --bootstrap: id=host:port,... (this node included)")
	f.join = fs.String("join", envDefault("LOCKNODE_JOIN", ""), "raft addresses (not HTTP) of running members to join through: host:port,...; meanwhile clients are answered TRYAGAIN / 503")
	f.joinTimeout = fs.Duration("join-timeout", 5*time.Minute, "give up joining after this long")
	f.httpAdvertise = fs.String("http-advertise", envDefault("LOCKNODE_HTTP_ADVERTISE", ""), "HTTP address other members hand to clients (default: --http-addr, with --advertise's host if that is a wildcard)")
	f.respAdvertise = fs.String("resp-advertise", envDefault("LOCKNODE_RESP_ADVERTISE", ""), "RESP address other members hand to clients in SENTINEL and INFO (default: --resp-addr, with --advertise's host if that is a wildcard)")
	respClusterDef, _ := strconv.ParseBool(envDefault("LOCKNODE_RESP_CLUSTER", "false"))
	f.respCluster = fs.Bool("resp-cluster", respClusterDef, "answer Redis Cluster clients: CLUSTER SHARDS/SLOTS/NODES describe one shard owning every slot, mastered by the raft leader, and multi-key commands across slots answer CROSSSLOT (default: off, a standalone Redis)")
	f.mirrorURL = fs.String("mirror", envDefault("LOCKNODE_MIRROR", ""), "mirror the lock table into this Redis: redis://[:password@]host:port[/db][?key_prefix=...&filter=...]; every node runs a mirror, the leader's writes")
	f.logLevel = fs.String("log-level", envDefault("LOCKNODE_LOG_LEVEL", "info"), "log level (trace, debug, info, warn, error, off)")
	f.logFormat = fs.String("log-format", envDefault("LOCKNODE_LOG_FORMAT", "text"), logFormatUsage)
	f.pprofAddr = fs.String("pprof", envDefault("LOCKNODE_PPROF", ""), "serve net/http/pprof on this host:port, its own listener (default: off)")
	f.maxMem = fs.String("max-memory", envDefault("LOCKNODE_MAX_MEMORY", ""), maxMemoryUsage)
	f.memLimit = fs.String("memory-limit", envDefault("LOCKNODE_MEMORY_LIMIT", ""), memoryLimitUsage)
	f.dataFreeWarn = fs.String("data-free-warn", envDefault("LOCKNODE_DATA_FREE_WARN", ""), dataFreeWarnUsage)
	f.gcPct = fs.String("gc-percent", envDefault("LOCKNODE_GC_PERCENT", ""), gcPercentUsage)
	f.procs = fs.String("gomaxprocs", envDefault("LOCKNODE_GOMAXPROCS", ""), gomaxprocsUsage)
	f.reqLimits = addLimitFlags(fs)
	f.scripts = addScriptFlags(fs)
	f.scriptLim = addScriptLimitFlags(fs)
	f.limitFlags = addNetLimitFlags(fs)
	f.tlsFlags = addServerTLSFlags(fs)
	f.dashFlags = addDashboardFlags(fs)
	f.readyFl = addReadyFlags(fs)
	f.traceFl = addTraceFlags(fs)
	f.waiterLease = fs.String("waiter-lease", envDefault("LOCKNODE_WAITER_LEASE", cluster.DefaultConfig().WaiterLease.String()),
		"the leader cancels a queued waiter that no node says it waits for after this long (a blocking acquire whose node died); negative: never")
	f.clusterUpgrade = fs.String("cluster-upgrade", envDefault("LOCKNODE_CLUSTER_UPGRADE", "auto"), clusterUpgradeUsage)
	f.usersFile = fs.String("users", envDefault("LOCKNODE_USERS", ""), "users file (Redis ACL syntax): every HTTP and RESP request authenticates and is checked against its user's permissions; re-read on SIGHUP (default: open, no users)")
	insecurePeerDef, _ := strconv.ParseBool(envDefault("LOCKNODE_INSECURE_PEER", "false"))
	f.insecurePeer = fs.Bool("insecure-peer", insecurePeerDef, insecurePeerUsage)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return exitWith(serveNode(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f))
	}
	return cmd
}

// checkServeFlags refuses what cluster.Config.Validate would, in terms
// of the flags an operator typed.
func checkServeFlags(id, data string, bootstrap bool, peers, join string) error {
	var errs []string
	if id == "" {
		errs = append(errs, "--id (LOCKNODE_ID) is required")
	}
	if data == "" {
		errs = append(errs, "--data (LOCKNODE_DATA) is required")
	}
	if bootstrap && strings.TrimSpace(join) != "" {
		errs = append(errs, "--bootstrap and --join exclude each other: bootstrap starts a new cluster, join enters a running one")
	}
	if pl, err := parsePeers(peers); err == nil && len(pl) > 0 && id != "" {
		self := false
		for _, p := range pl {
			self = self || p.ID == id
		}
		if !self {
			errs = append(errs, fmt.Sprintf("--peers must include this node (--id %s)", id))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// serveNode runs one node until ctx ends and returns serve's exit code.
func serveNode(ctx context.Context, stdout, stderr io.Writer, f *serveFlags) int {
	st, err := f.setup(stderr)
	switch {
	case errors.Is(err, errReported):
		return 2
	case err != nil:
		fmt.Fprintln(stderr, "locknode serve:", err)
		return 2
	}
	log := st.log
	st.memPlan.Apply(log)
	st.gcPlan.Apply(log)
	st.procsPlan.Apply(log)
	// pprof first: a restore or join that takes long is worth profiling.
	if *f.pprofAddr != "" {
		pp, err := startPprof(*f.pprofAddr, log)
		if err != nil {
			fmt.Fprintln(stderr, "locknode serve: --pprof:", err)
			return 1
		}
		defer pp.Close()
	}

	tracing, err := f.traceFl.start(ctx, st.cfg.Cluster.ID, log)
	if err != nil {
		fmt.Fprintln(stderr, "locknode serve:", err)
		return 2
	}
	defer func() {
		// The spans still queued, within a bound: a collector that is
		// down must not hold the shutdown.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tracing.Shutdown(sctx)
	}()
	st.cfg.Cluster.TracerProvider = tracing.TracerProvider()

	sctx, cancel := context.WithTimeout(ctx, *f.joinTimeout)
	p, err := server.Start(sctx, st.cfg)
	cancel()
	var np *transport.NotPeerError
	switch {
	case errors.As(err, &np):
		fmt.Fprintf(stderr, "locknode serve: --join %s: that is %s; --join takes a member's raft address (--raft-addr / --advertise); it answered %q\n",
			np.Addr, np.What(), np.Answer)
		return 1
	case err != nil:
		fmt.Fprintln(stderr, "locknode serve:", err)
		return 1
	}
	stopGCTuner := st.gcPlan.StartTuner()
	defer stopGCTuner()
	if st.cfg.Users == nil && (beyondLoopback(p.HTTPAddr()) || beyondLoopback(p.RESPAddr())) {
		log.Warn("HTTP or RESP listens beyond loopback without --users: anyone who reaches the port can take, release and force-release any lock",
			"http", p.HTTPAddr(), "resp", p.RESPAddr())
	}
	stopReload := watchSIGHUP(log, st.reloads)
	defer stopReload()
	fmt.Fprintf(stdout, "node %s http=%s resp=%s raft=%s\n", st.cfg.Cluster.ID, p.HTTPAddr(), p.RESPAddr(), p.Node().Addr())
	<-ctx.Done()
	log.Info("shutting down")
	if err := p.Close(); err != nil {
		fmt.Fprintln(stderr, "locknode serve: close:", err)
		return 1
	}
	return 0
}
