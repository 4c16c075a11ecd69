package transport

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// BenchmarkCall measures Call round trips over loopback with 1 and 64
// concurrent callers (the latter shows pipelining and write batching).
func BenchmarkCall(b *testing.B) {
	for _, callers := range []int{1, 64} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			srv := newTransport(b, nil)
			srv.Serve(func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
			cli := newTransport(b, nil)
			addr := srv.Addr().String()
			req := make([]byte, 64)
			ctx := context.Background()
			if _, err := cli.Call(ctx, addr, req); err != nil { // warm the pool
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			var next sync.Mutex
			n := 0
			for range callers {
				wg.Add(1)
				go func() { // ends when b.N calls have been made in total
					defer wg.Done()
					for {
						next.Lock()
						if n >= b.N {
							next.Unlock()
							return
						}
						n++
						next.Unlock()
						if _, err := cli.Call(ctx, addr, req); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}
