//go:build !unix

package cluster

import "errors"

// diskSpace is not implemented here: the free-space gauge reads -1 and
// the low-space warning is off.
func diskSpace(string) (free, total uint64, err error) {
	return 0, 0, errors.New("cluster: free space is not measured on this platform")
}
