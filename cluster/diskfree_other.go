//go:build !unix && !windows

package cluster

import "errors"

// diskSpace: plan9 and js/wasm have no free-space call the node can use,
// so there the gauge reads -1 and the low-space warning is off.
func diskSpace(string) (free, total uint64, err error) {
	return 0, 0, errors.New("cluster: free space is not measured on this platform")
}
