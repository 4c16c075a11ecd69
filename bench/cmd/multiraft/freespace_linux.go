package main

import (
	"fmt"
	"syscall"
)

// walSegment is what raft-wal preallocates for each group member's log.
const walSegment = 64 << 20

// checkFreeSpace refuses to start members group members in dir when the
// filesystem cannot hold their preallocated WAL segments and 1 GiB more,
// instead of filling a shared disk.
func checkFreeSpace(dir string, members int) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return fmt.Errorf("free space of %s: %w", dir, err)
	}
	free := st.Bavail * uint64(st.Bsize)
	need := uint64(members)*walSegment + 1<<30
	if free < need {
		return fmt.Errorf("%s has %d MiB free; %d group members need %d MiB (a 64 MiB WAL segment each, and 1 GiB): pass -dir on a larger filesystem or fewer -idle-groups",
			dir, free>>20, members, need>>20)
	}
	return nil
}
