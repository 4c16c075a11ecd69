package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/internal/proctune"
	"github.com/locknode/locknode/server"
)

// serveFlags are serve's flags as declared in newServeCmd. setup turns
// them into the node's server.Config: a new flag gets a field here, its
// declaration in newServeCmd, and one assignment in setup or
// clusterConfig (errors name the flag; serve exits 2 on them).
type serveFlags struct {
	id, data, raftAddr, advertise, httpAddr, respAddr *string
	bootstrap                                         *bool
	peers, join                                       *string
	joinTimeout                                       *time.Duration
	httpAdvertise, respAdvertise, mirrorURL           *string
	respCluster                                       *bool
	logLevel, logFormat, pprofAddr                    *string
	maxMem, memLimit, dataFreeWarn, gcPct, procs      *string
	reqLimits                                         *limitFlags
	scripts                                           scriptFlags
	scriptLim                                         *scriptLimits
	limitFlags                                        *netLimits
	tlsFlags                                          serverTLSFlags
	dashFlags                                         *dashboardFlags
	readyFl                                           *readyFlags
	traceFl                                           *traceFlags
	waiterLease, clusterUpgrade, usersFile            *string
	insecurePeer                                      *bool
}

// serveSetup is what serve runs: the node's config and the process
// settings around it.
type serveSetup struct {
	cfg       server.Config
	log       hclog.Logger
	memPlan   proctune.MemLimitPlan
	gcPlan    proctune.GCPercentPlan
	procsPlan proctune.GOMAXPROCSPlan
	reloads   []reloadFunc // re-read on SIGHUP
}

// errReported: the reason is already on stderr.
var errReported = errors.New("reported")

// setup checks every flag and builds the node's config; an error is a
// bad command line or configuration (exit 2), its text after
// "locknode serve: ".
func (f *serveFlags) setup(stderr io.Writer) (*serveSetup, error) {
	limits, err := f.limitFlags.parse()
	if err != nil {
		return nil, err
	}
	st := &serveSetup{}
	if st.log, err = newFormattedLogger(stderr, *f.logLevel, *f.logFormat); err != nil {
		return nil, err
	}
	if err := checkServeFlags(*f.id, *f.data, *f.bootstrap, *f.peers, *f.join); err != nil {
		return nil, err
	}
	mirror, err := parseMirrorFlag(*f.mirrorURL)
	if err != nil {
		return nil, fmt.Errorf("--mirror: %w", err)
	}
	var ok bool
	if st.memPlan, st.gcPlan, ok = planRuntime("locknode serve", stderr, *f.pprofAddr, *f.memLimit, *f.gcPct); !ok {
		return nil, errReported
	}
	if st.procsPlan, err = proctune.GOMAXPROCS(*f.procs); err != nil {
		return nil, fmt.Errorf("--gomaxprocs: %w", err)
	}
	tlsSet, err := f.tlsFlags.build(*f.id)
	if err != nil {
		return nil, err
	}
	if tlsSet.mirror != nil {
		if mirror == nil {
			return nil, errors.New("--mirror-cacert, --mirror-cert and --mirror-key need --mirror")
		}
		mirror.TLS = tlsSet.mirror
	}
	cfg, err := f.clusterConfig(st.log, &limits, tlsSet)
	if err != nil {
		return nil, err
	}
	audit := auth.NewAudit(st.log.Named("audit"))
	var users *auth.Store
	if *f.usersFile != "" {
		if users, err = auth.NewStore(*f.usersFile, audit); err != nil {
			return nil, fmt.Errorf("--users: %w", err)
		}
	}
	peerWarn, err := peerSecurity(cfg.BindAddr, cfg.PeerServerTLS != nil, users != nil, *f.insecurePeer)
	if err != nil {
		return nil, err
	}
	if peerWarn != "" {
		st.log.Warn(peerWarn, "raft_addr", cfg.BindAddr)
	}
	cfg.Audit = audit
	st.reloads = tlsSet.reloads
	if users != nil {
		st.reloads = append(st.reloads, reloadFunc{"users", users.Reload})
	}
	version, commit := buildVersion()
	limits.RESP.Cluster = *f.respCluster
	st.cfg = server.Config{
		Cluster:       cfg,
		HTTPAddr:      *f.httpAddr,
		RESPAddr:      *f.respAddr,
		HTTPAdvertise: *f.httpAdvertise,
		RESPAdvertise: *f.respAdvertise,
		HTTP:          limits.HTTP,
		RESP:          limits.RESP,
		AuthThrottle:  limits.AuthThrottle,
		Mirror:        mirror,
		TLS:           tlsSet.client,
		Logger:        st.log,
		Users:         users,
		Audit:         audit,
		Version:       version,
		Commit:        commit,
	}
	return st, nil
}

// clusterConfig is the raft node's config from the flags; it lowers the
// connection limits in limits to what the descriptor limit allows.
func (f *serveFlags) clusterConfig(log hclog.Logger, limits *parsedLimits, tlsSet tlsSetup) (cluster.Config, error) {
	pl, err := parsePeers(*f.peers)
	if err != nil {
		return cluster.Config{}, fmt.Errorf("--peers: %w", err)
	}
	if len(pl) > 0 && !*f.bootstrap {
		return cluster.Config{}, errors.New("--peers only makes sense with --bootstrap")
	}
	cfg := cluster.DefaultConfig()
	if cfg.FSM.MaxMemory, err = parseMaxMemory(*f.maxMem); err != nil {
		return cfg, fmt.Errorf("--max-memory: %w", err)
	}
	if cfg.DataFreeWarn, err = parseDataFreeWarn(*f.dataFreeWarn); err != nil {
		return cfg, fmt.Errorf("--data-free-warn: %w", err)
	}
	cfg.ID = *f.id
	cfg.DataDir = *f.data
	cfg.BindAddr = *f.raftAddr
	cfg.Advertise = *f.advertise
	cfg.Bootstrap = *f.bootstrap
	cfg.Peers = pl
	cfg.Join = splitList(*f.join)
	cfg.Logger = log
	// A node process owns its heap: give the snapshot's transient memory
	// back to the OS (cluster.Config.FreeMemoryAfterSnapshot says why).
	cfg.FreeMemoryAfterSnapshot = true
	if cfg.WaiterLease, err = time.ParseDuration(*f.waiterLease); err != nil || cfg.WaiterLease == 0 {
		return cfg, fmt.Errorf("--waiter-lease %q: want a duration, positive or negative (off)", *f.waiterLease)
	}
	if cfg.ManualUpgrade, err = parseClusterUpgrade(*f.clusterUpgrade); err != nil {
		return cfg, err
	}
	if err := f.reqLimits.apply(&cfg.FSM); err != nil {
		return cfg, err
	}
	if err := f.scripts.apply(&cfg.FSM); err != nil {
		return cfg, err
	}
	if err := f.scriptLim.apply(&cfg.FSM); err != nil {
		return cfg, err
	}
	fitFDLimit(limits, 1, log, log.Warn)
	limits.applyPeer(&cfg)
	if err := f.dashFlags.apply(&cfg); err != nil {
		return cfg, err
	}
	if err := f.readyFl.apply(&cfg); err != nil {
		return cfg, err
	}
	cfg.PeerServerTLS, cfg.PeerClientTLS = tlsSet.peerServer, tlsSet.peerClient
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}
