package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/locknode/locknode/cluster"
)

func init() { addCommand(newSnapshotCmd) }

// newSnapshotCmd is `locknode snapshot save|restore`.
func newSnapshotCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot save FILE | status FILE | restore FILE --data DIR --id ID --peers ID=HOST:PORT,...",
		Short: "back up a cluster to a file, check a backup, or prepare a new node's data directory from one",
		Long: `save      writes a consistent snapshot of the cluster (every lock, fence, session, waiter,
          value and script) to FILE, streamed from a node over HTTP (admin permission), with
          its index, term and a SHA-256 checked against the node's; FILE is replaced only
          once the whole snapshot arrived, matched the node's checksum and decoded.
status    reads FILE without a node, verifies its checksum and decodes it whole, and prints
          its index, term, format, cluster version, cluster time and counts of locks, keys,
          sessions and scripts. A damaged, truncated or undecodable file fails with exit 1.
          A backup saved by an older release has no checksum (status says so) and still restores.
restore   verifies FILE's checksum, then prepares the empty data directory DIR so that "locknode serve --id ID --data DIR"
          (without --bootstrap) starts from the snapshot, as a member of the new cluster
          --peers. Run it for every node of the new cluster, with the same FILE, --peers
          and --clock-base.
          The restored cluster's clock starts at --clock-base (default: now, for one node;
          several nodes need one time given to every node): every absolute time in the
          backup moves forward by its age, so RESP TIME follows wall time and every lease,
          wait, session and key expiry keeps the time it had left when the backup was taken.`,
		Example: `  locknode snapshot save backup.snap --endpoints 10.0.0.1:8080 --user admin
  locknode snapshot status backup.snap
  locknode snapshot status --json backup.snap | jq .index
  locknode snapshot restore backup.snap --data /var/lib/locknode --id n1 \
      --peers n1=10.0.1.1:7000,n2=10.0.1.2:7000,n3=10.0.1.3:7000 --clock-base 2026-05-01T12:00:00Z`,
		Args: cobra.ArbitraryArgs,
	}
	fs := cmd.Flags()
	cf := addClientFlags(fs)
	timeout := fs.Duration("timeout", time.Hour, "save: give up after this long")
	dataDir := fs.String("data", "", "restore: the new node's data directory (empty or absent)")
	id := fs.String("id", "", "restore: the new node's ID (one of --peers)")
	peers := fs.String("peers", "", "restore: the new cluster's voters, id=host:port,... (raft addresses)")
	asJSON := fs.Bool("json", false, "status: print the file's description as JSON")
	clockBase := fs.String("clock-base", "", "restore: the restored cluster's clock: now, keep (the backup's), an RFC 3339 time or Unix ms; the same on every node (default: now for a single node, required with several --peers)")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx, stdout, stderr := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		if len(pos) != 2 || (pos[0] != "save" && pos[0] != "restore" && pos[0] != "status") {
			return usageError("want save FILE, status FILE or restore FILE, got %q", pos)
		}
		file := pos[1]
		if pos[0] == "status" {
			info, err := inspectSnapshot(file)
			if err != nil {
				return &exitError{code: exitLockFailed, err: fmt.Errorf("status: %w", err)}
			}
			if *asJSON {
				return exitWith(printJSON(stdout, stderr, info))
			}
			printSnapshotInfo(stdout, info)
			return nil
		}
		if pos[0] == "restore" {
			pl, err := parsePeers(*peers)
			switch {
			case err != nil:
				return usageError("--peers: %w", err)
			case *dataDir == "" || *id == "" || len(pl) == 0:
				return usageError("restore needs --data, --id and --peers")
			}
			found := false
			for _, p := range pl {
				found = found || p.ID == *id
			}
			if !found {
				return usageError("--id %s is not one of --peers", *id)
			}
			base, err := parseClockBase(*clockBase, len(pl), time.Now())
			if err != nil {
				return usageError("--clock-base: %w", err)
			}
			res, err := restoreBackup(file, *dataDir, pl, cluster.RestoreOptions{ClockBase: base})
			if err != nil {
				return &exitError{code: exitLockFailed, err: fmt.Errorf("restore: %w", err)}
			}
			fmt.Fprintf(stdout, "restored the snapshot at index %d into %s\n", res.Index, *dataDir)
			from, to := time.UnixMilli(res.From).UTC(), time.UnixMilli(res.To).UTC()
			if res.To > res.From {
				fmt.Fprintf(stdout, "cluster clock moved from %s to %s (+%s): every lease, wait, session and expiry keeps the time it had left\n",
					from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano), time.Duration(res.To-res.From)*time.Millisecond)
			} else {
				fmt.Fprintf(stdout, "cluster clock kept at %s\n", from.Format(time.RFC3339Nano))
			}
			if len(pl) > 1 {
				fmt.Fprintf(stdout, "restore every other node of the cluster with the same --peers and --clock-base %s\n", clockBaseArg(*clockBase, to))
			}
			fmt.Fprintf(stdout, "start the node with:\n  locknode serve --id %s --data %s (and its usual flags; no --bootstrap)\n",
				*id, *dataDir)
			return nil
		}
		c, err := cf.client(stderr)
		if err != nil {
			return usageError("%w", err)
		}
		sctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		st, err := c.SnapshotStream(sctx)
		if err != nil {
			return &exitError{code: exitLockFailed, err: fmt.Errorf("save: %s", explain(err))}
		}
		defer st.Body.Close()
		n, sum, nodeChecked, err := saveBackup(file, st)
		if err != nil {
			return &exitError{code: exitLockFailed, err: fmt.Errorf("save: %w", err)}
		}
		fmt.Fprintf(stdout, "saved the snapshot at index %d (%d bytes) to %s\n%s\n", st.Index, n, file, savedChecksumNote(sum, nodeChecked))
		return nil
	}
	return cmd
}

// maxClockBaseAhead is how far past this machine's clock --clock-base may
// be: a little, for the clock differences between the machines a cluster
// is restored on; more is a mistake (seconds for milliseconds, a wrong
// year) that would put the cluster clock ahead of real time.
const maxClockBaseAhead = time.Minute

// parseClockBase turns --clock-base into RestoreOptions.ClockBase (Unix
// ms; 0 keeps the backup's clock). "now" is refused for a cluster of
// several voters, which are restored one by one: each would take its own
// now, and tables that differ by a few milliseconds decide expiries
// differently.
func parseClockBase(v string, voters int, now time.Time) (int64, error) {
	switch v {
	case "keep":
		return 0, nil
	case "", "now":
		if voters > 1 {
			return 0, fmt.Errorf("a restore of %d voters needs one clock base given to every node, or the nodes' tables would differ: "+
				"run each with --clock-base %s (now), or --clock-base keep for the backup's own clock", voters, now.UTC().Format(time.RFC3339))
		}
		return now.UnixMilli(), nil
	}
	var at time.Time
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		if ms <= 0 {
			return 0, fmt.Errorf("%q: Unix milliseconds must be positive", v)
		}
		at = time.UnixMilli(ms)
	} else if at, err = time.Parse(time.RFC3339Nano, v); err != nil {
		return 0, fmt.Errorf("%q: want now, keep, an RFC 3339 time (2026-05-01T12:00:00Z) or Unix milliseconds", v)
	}
	if at.After(now.Add(maxClockBaseAhead)) {
		return 0, fmt.Errorf("%s is %s ahead of this machine's clock (at most %s): the cluster clock would run ahead of real time",
			at.UTC().Format(time.RFC3339), at.Sub(now).Round(time.Second), maxClockBaseAhead)
	}
	if at.UnixMilli() <= 0 {
		return 0, fmt.Errorf("%q is not after 1970", v)
	}
	return at.UnixMilli(), nil
}

// clockBaseArg is the --clock-base that gives another node the same
// restore: what was given, or the time it resolved to.
func clockBaseArg(given string, to time.Time) string {
	if given == "keep" {
		return "keep"
	}
	return to.Format(time.RFC3339Nano)
}
