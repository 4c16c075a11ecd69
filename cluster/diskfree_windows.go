//go:build windows

package cluster

import "golang.org/x/sys/windows"

// diskSpace reports the free bytes available to this process and the
// size of the volume that holds dir.
func diskSpace(dir string) (free, total uint64, err error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, 0, err
	}
	var avail, size, all uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &size, &all); err != nil {
		return 0, 0, err
	}
	return avail, size, nil
}
