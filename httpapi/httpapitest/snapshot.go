package httpapitest

import (
	"context"
	"io"
)

// WriteSnapshot implements httpapi.Snapshotter: the table's snapshot in
// the fsm format, as a node writes it.
func (f *Fake) WriteSnapshot(ctx context.Context, w io.Writer, start func(index uint64)) error {
	if err := f.begin("WriteSnapshot", ""); err != nil {
		return err
	}
	return f.l.WriteSnapshot(ctx, w, start)
}
