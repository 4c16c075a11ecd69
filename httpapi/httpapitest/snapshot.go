package httpapitest

import (
	"context"
	"fmt"
	"io"
)

// WriteSnapshot implements httpapi.Snapshotter with a stand-in: the
// fake's grant counter as the index and a short text, not the fsm
// format (the fake has no table).
func (f *Fake) WriteSnapshot(ctx context.Context, w io.Writer, start func(index uint64)) error {
	f.mu.Lock()
	idx, err := f.index, f.failErr
	f.mu.Unlock()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	start(idx)
	_, err = fmt.Fprintf(w, "httpapitest fake snapshot at %d\n", idx)
	return err
}
