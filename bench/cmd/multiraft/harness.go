package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/cluster"
	"github.com/locknode/locknode/transport"
)

// maxGroups is how many groups one node's listener tells apart: the
// group id is one byte.
const maxGroups = 256

// Cluster is nodes processes' worth of locknode nodes in this process:
// node i owns one peer listener (a Mux) and runs one cluster.Node per
// raft group on it. Every group has the same members, bootstrapped
// together.
type Cluster struct {
	Muxes  []*Mux
	Groups [][]*cluster.Node // [group][node]
}

// StartCluster starts groups raft groups on nodes shared listeners, each
// group's node i with its own data directory under dir
// (dir/gNN/nI), configured by cfgFor(group) (timings, log store); the
// harness sets ID, DataDir, Transport, Bootstrap and Peers. It returns
// once every group has a leader, or ctx ends.
func StartCluster(ctx context.Context, dir string, nodes, groups int, cfgFor func(g int) cluster.Config, logger hclog.Logger) (_ *Cluster, err error) {
	if nodes < 1 || groups < 1 || groups > maxGroups {
		return nil, fmt.Errorf("multiraft: %d nodes, %d groups: want at least 1 of each and at most %d groups", nodes, groups, maxGroups)
	}
	c := &Cluster{Groups: make([][]*cluster.Node, groups)}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	for i := 0; i < nodes; i++ {
		tc := transport.DefaultConfig()
		tc.Logger = logger.Named(fmt.Sprintf("n%d.transport", i+1))
		// Every group's raft pool and heartbeat connections share this
		// port: a few per group and peer.
		tc.MaxConns = 16 * groups * nodes
		tr, err := transport.New(tc)
		if err != nil {
			return nil, fmt.Errorf("multiraft: transport: %w", err)
		}
		c.Muxes = append(c.Muxes, NewMux(tr))
	}
	peers := make([]cluster.Peer, nodes)
	for i, m := range c.Muxes {
		peers[i] = cluster.Peer{ID: fmt.Sprintf("n%d", i+1), Addr: m.Addr().String()}
	}
	// Groups start in parallel, one goroutine per group; each ends when
	// its nodes are started (or one failed).
	var wg sync.WaitGroup
	errs := make([]error, groups)
	sem := make(chan struct{}, 8)
	for g := 0; g < groups; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[g] = c.startGroup(ctx, dir, g, peers, cfgFor(g), logger)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for g := range c.Groups {
		if _, err := c.Leader(ctx, g); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *Cluster) startGroup(ctx context.Context, dir string, g int, peers []cluster.Peer, base cluster.Config, logger hclog.Logger) error {
	for i, m := range c.Muxes {
		tr, err := m.Group(byte(g))
		if err != nil {
			return err
		}
		cfg := base
		cfg.ID = peers[i].ID
		cfg.DataDir = filepath.Join(dir, fmt.Sprintf("g%02d", g), cfg.ID)
		cfg.Transport = tr
		cfg.Bootstrap = true
		cfg.Peers = peers
		cfg.Logger = logger.Named(fmt.Sprintf("g%02d.%s", g, cfg.ID))
		n, err := cluster.Start(ctx, cfg)
		if err != nil {
			_ = tr.Close()
			return fmt.Errorf("multiraft: group %d node %s: %w", g, cfg.ID, err)
		}
		c.Groups[g] = append(c.Groups[g], n)
	}
	return nil
}

// Leader waits for group g's leader and returns its node.
func (c *Cluster) Leader(ctx context.Context, g int) (*cluster.Node, error) {
	nodes := c.Groups[g]
	if err := nodes[0].WaitLeader(ctx); err != nil {
		return nil, fmt.Errorf("multiraft: group %d: %w", g, err)
	}
	for {
		for _, n := range nodes {
			if n.IsLeader() {
				return n, nil
			}
		}
		// A leader is known but its own node has not noticed yet, or it
		// just stepped down: ask again until one says so.
		if err := nodes[0].WaitLeader(ctx); err != nil {
			return nil, fmt.Errorf("multiraft: group %d: %w", g, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("multiraft: group %d: %w", g, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Close closes every node, then the shared listeners.
func (c *Cluster) Close() error {
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, nodes := range c.Groups {
		for _, n := range nodes {
			wg.Add(1)
			// Ends when the node has closed.
			go func() {
				defer wg.Done()
				if err := n.Close(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	for _, m := range c.Muxes {
		if err := m.Close(); err != nil && !errors.Is(err, transport.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// SpreadLeaders moves group g's leadership to node g mod nodes, as a
// multi-group deployment balances leaders across its nodes.
func (c *Cluster) SpreadLeaders(ctx context.Context) error {
	for g, nodes := range c.Groups {
		want := nodes[g%len(nodes)]
		for {
			l, err := c.Leader(ctx, g)
			if err != nil {
				return err
			}
			if l == want {
				break
			}
			if _, err := l.TransferLeadership(ctx, want.ID()); err != nil {
				// The leader changed under us, or raft refused for now:
				// look again until ctx ends.
				if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
					return fmt.Errorf("multiraft: group %d: leadership to %s: %w", g, want.ID(), err)
				}
			}
		}
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
