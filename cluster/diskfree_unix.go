//go:build unix

package cluster

import "syscall"

// diskSpace returns the free bytes (available to an unprivileged
// process, as df shows them) and the size of the filesystem holding path.
func diskSpace(path string) (free, total uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, 0, err
	}
	bs := uint64(st.Bsize) //nolint:unconvert // int64 on linux, uint32 on darwin
	return uint64(st.Bavail) * bs, uint64(st.Blocks) * bs, nil
}
