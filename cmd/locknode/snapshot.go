package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
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
          --peers. Run it for every node of the new cluster, with the same FILE and --peers.`,
		Example: `  locknode snapshot save backup.snap --endpoints 10.0.0.1:8080 --user admin
  locknode snapshot status backup.snap
  locknode snapshot status --json backup.snap | jq .index
  locknode snapshot restore backup.snap --data /var/lib/locknode --id n1 \
      --peers n1=10.0.1.1:7000,n2=10.0.1.2:7000,n3=10.0.1.3:7000`,
		Args: cobra.ArbitraryArgs,
	}
	fs := cmd.Flags()
	cf := addClientFlags(fs)
	timeout := fs.Duration("timeout", time.Hour, "save: give up after this long")
	dataDir := fs.String("data", "", "restore: the new node's data directory (empty or absent)")
	id := fs.String("id", "", "restore: the new node's ID (one of --peers)")
	peers := fs.String("peers", "", "restore: the new cluster's voters, id=host:port,... (raft addresses)")
	asJSON := fs.Bool("json", false, "status: print the file's description as JSON")
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
			idx, err := restoreBackup(file, *dataDir, pl)
			if err != nil {
				return &exitError{code: exitLockFailed, err: fmt.Errorf("restore: %w", err)}
			}
			fmt.Fprintf(stdout, "restored the snapshot at index %d into %s; start the node with:\n  locknode serve --id %s --data %s (and its usual flags; no --bootstrap)\n",
				idx, *dataDir, *id, *dataDir)
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
