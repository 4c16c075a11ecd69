package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// Cluster versions (docs/UPGRADING.md; fsm/version.go for the state).
//
// Each node runs a range of cluster versions, LocalVersions, and says so
// in its node-info answer (nodeinfo.go), after the fields older nodes
// send; an older node ignores the extra fields, and an answer without
// them means 1..1. The leader (or `locknode cluster upgrade` on any node,
// Node.Upgrade) asks every member of the configuration, voters and
// non-voters, and proposes an OpSetVersion entry raising the active
// version to the highest one every member runs. A member that does not
// answer blocks the activation: its range is unknown.
//
// A join carries the joiner's range (rpcJoin, after its id and address);
// the leader refuses a node whose range does not include the active
// version, and the joiner stops with ErrVersionRefused instead of
// retrying.
//
// A node meeting an entry or snapshot it cannot apply halts (halt): the
// table refuses that entry and every later one, the node reports not
// ready with the error, writes no snapshot (raft would otherwise compact
// the log past entries this node never applied) and shuts its raft
// instance down so that it neither leads nor votes with a state it
// cannot advance. The process stays up to say why; a restart with a
// binary that runs the version named replays the log from the last
// snapshot.

// VersionRange is the cluster versions a binary runs, Min..Max.
type VersionRange struct{ Min, Max uint32 }

func (r VersionRange) String() string { return fmt.Sprintf("%d..%d", r.Min, r.Max) }

// Contains reports whether v is in r.
func (r VersionRange) Contains(v uint32) bool { return r.Min <= v && v <= r.Max }

// LocalVersions is the range of cluster versions this binary runs.
func LocalVersions() VersionRange {
	return VersionRange{fsm.MinClusterVersion, fsm.MaxClusterVersion}
}

// legacyVersions is the range of a peer that does not say: a release
// from before cluster versions were advertised runs version 1 only.
var legacyVersions = VersionRange{1, 1}

var (
	// ErrVersionRefused: a node's range of cluster versions does not
	// include the cluster's active one, so it may not join.
	ErrVersionRefused = errors.New("cluster: refused: the node does not run the cluster's active version")
	// ErrUpgradeBlocked: a newer cluster version cannot be activated
	// (a member does not run it, or did not say which versions it runs).
	ErrUpgradeBlocked = errors.New("cluster: upgrade blocked")
)

// Each peer RPC kind is listed with the cluster version that introduced
// it in rpcKinds (rpctable.go); rpcKindActive says whether it may be used.

// ClusterVersion returns the active cluster version as of the last entry
// this node applied.
func (n *raftReplica) ClusterVersion() uint32 {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.table.Version()
}

// Halted returns why this node stopped applying the log (an entry or
// snapshot of a cluster version this binary does not run), or nil.
func (n *raftReplica) Halted() error {
	if p := n.haltErr.Load(); p != nil {
		return *p
	}
	return nil
}

// halt stops this node for good after the table refused an entry or a
// snapshot it cannot apply (see the comment at the top of this file).
func (n *raftReplica) halt(err error) {
	if !n.haltErr.CompareAndSwap(nil, &err) {
		return
	}
	n.log.Error("stopped applying the log: this binary cannot apply it; restart this node, on the same data directory, with a locknode that runs the cluster version named",
		"error", err, "runs", LocalVersions().String())
	if r := n.raft; r != nil {
		// Ends once raft is down: it waits for the apply under way (the
		// caller's) to return.
		go func() { _ = r.Shutdown().Error() }()
	}
}

// Upgrade activates the highest cluster version every member of the
// configuration runs, if it is above the active one, through the log
// (any node may call it; the entry is forwarded to the leader). It
// fails with ErrUpgradeBlocked when a member does not answer. The
// active version is never lowered; with nothing to activate it returns
// the active version unchanged. Activation closes the rollback window:
// a binary that does not run the new version cannot apply the log
// afterwards (docs/UPGRADING.md).
func (n *roster) Upgrade(ctx context.Context) (api.UpgradeResult, error) {
	res := api.UpgradeResult{Before: n.ClusterVersion(), Members: map[string]string{}}
	res.ClusterVersion = res.Before
	target, members, err := n.upgradeTarget(ctx)
	for id, r := range members {
		res.Members[id] = r.String()
	}
	if err != nil {
		return res, fmt.Errorf("%w: %w", api.ErrConflict, err)
	}
	if target <= res.Before {
		return res, nil
	}
	r, err := n.Apply(ctx, &fsm.Command{Op: fsm.OpSetVersion, Token: uint64(target)})
	if err == nil {
		err = r.Err
	}
	if err != nil {
		return res, fmt.Errorf("cluster: activating cluster version %d: %w", target, err)
	}
	res.ClusterVersion = uint32(r.Count)
	n.log.Info("cluster version activated", "version", res.ClusterVersion, "was", res.Before)
	return res, nil
}

// upgradeTarget asks every member of the configuration for its range and
// returns the highest version all of them run (at most this binary's).
func (n *roster) upgradeTarget(ctx context.Context) (uint32, map[string]VersionRange, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return 0, nil, fmt.Errorf("%w: configuration: %w", ErrUpgradeBlocked, err)
	}
	members := make(map[string]VersionRange)
	target := LocalVersions().Max
	var blocked []string
	for _, s := range f.Configuration().Servers {
		rng := LocalVersions()
		if string(s.ID) != n.id {
			cctx, cancel := context.WithTimeout(ctx, nodeInfoTimeout)
			info, err := n.askNodeInfo(cctx, string(s.ID), string(s.Address))
			cancel()
			if err != nil {
				blocked = append(blocked, fmt.Sprintf("%s did not answer (%v)", s.ID, err))
				continue
			}
			rng = info.versions
		}
		members[string(s.ID)] = rng
		target = min(target, rng.Max)
	}
	if len(blocked) > 0 {
		return 0, members, fmt.Errorf("%w: %s", ErrUpgradeBlocked, strings.Join(blocked, "; "))
	}
	return target, members, nil
}

// upgradeCheckTimeout bounds one automatic upgrade attempt.
const upgradeCheckTimeout = 10 * time.Second

// autoUpgradeLoop activates a newer cluster version once every member
// runs it (Config.ManualUpgrade off): every UpgradeCheckInterval while
// the active version is below this binary's highest, the first time one
// interval into the term, so that a leader elected while its cluster
// starts or stops does not ask every member at once. It ends with the
// term (l.done) or the node, or once nothing is left to activate.
func (n *leaderTerm) autoUpgradeLoop(l *leadership) {
	t := time.NewTicker(n.cfg.UpgradeCheckInterval)
	defer t.Stop()
	var lastBlock string
	for {
		if n.ClusterVersion() >= fsm.MaxClusterVersion || n.Halted() != nil {
			return
		}
		select {
		case <-t.C:
		case <-l.done:
			return
		case <-n.closed:
			return
		}
		if n.ClusterVersion() >= fsm.MaxClusterVersion || n.Halted() != nil {
			return
		}
		ctx, cancel := context.WithTimeout(l.ctx, upgradeCheckTimeout)
		res, err := n.Upgrade(ctx)
		cancel()
		block := ""
		switch {
		case err != nil:
			block = err.Error()
		case res.ClusterVersion < fsm.MaxClusterVersion:
			var older []string
			for id, r := range res.Members {
				older = append(older, id+" runs "+r)
			}
			slices.Sort(older)
			block = "not every member runs a newer version: " + strings.Join(older, ", ")
		}
		if block != "" && block != lastBlock {
			// Said once per change, not every interval.
			n.log.Info("cluster version not raised yet", "active", res.ClusterVersion, "reason", block)
		}
		lastBlock = block
	}
}

// checkJoin refuses, on the leader, a joiner whose range does not
// include the active cluster version. A zero rng (an AddVoter without
// one) is asked of the node itself; one that does not answer is let in
// (an operator may add a node before it starts: it halts if it cannot
// apply the log).
func (n *roster) checkJoin(ctx context.Context, id, addr string, rng VersionRange) error {
	if rng == (VersionRange{}) {
		cctx, cancel := context.WithTimeout(ctx, nodeInfoTimeout)
		info, err := n.askNodeInfo(cctx, id, addr)
		cancel()
		if err != nil {
			n.log.Debug("join: versions of the new member unknown", "id", id, "error", err)
			return nil
		}
		rng = info.versions
	}
	active := n.ClusterVersion()
	if rng.Contains(active) {
		return nil
	}
	err := fmt.Errorf("%w: %s runs cluster versions %s, the cluster runs version %d", ErrVersionRefused, id, rng, active)
	n.log.Warn("join refused", "id", id, "addr", addr, "error", err)
	return err
}
