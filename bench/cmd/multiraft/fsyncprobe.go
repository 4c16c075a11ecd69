package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// probeFsync reports how many 4 KiB append + fdatasync pairs the disk
// under dir completes per second with k writers at once, each on its own
// file, for each k: whether more logs fsyncing in parallel (more groups)
// get more writes through, or share a fixed rate.
func probeFsync(dir string, ks []int, d time.Duration) (map[string]float64, error) {
	out := map[string]float64{}
	buf := make([]byte, 4096)
	for _, k := range ks {
		var done atomic.Int64
		var wg sync.WaitGroup
		errs := make([]error, k)
		stop := time.Now().Add(d)
		for i := 0; i < k; i++ {
			wg.Add(1)
			// Ends at stop, or at its first error.
			go func() {
				defer wg.Done()
				f, err := os.Create(filepath.Join(dir, fmt.Sprintf("fsync-probe-%d-%d", k, i)))
				if err != nil {
					errs[i] = err
					return
				}
				defer os.Remove(f.Name())
				defer f.Close()
				for time.Now().Before(stop) {
					if _, err := f.Write(buf); err != nil {
						errs[i] = err
						return
					}
					if err := fdatasync(f); err != nil {
						errs[i] = err
						return
					}
					done.Add(1)
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return nil, fmt.Errorf("fsync probe: %w", err)
			}
		}
		out[fmt.Sprintf("fsyncs_per_s_%d_writers", k)] = float64(done.Load()) / d.Seconds()
	}
	return out, nil
}
