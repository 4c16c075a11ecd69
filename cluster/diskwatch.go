package cluster

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
)

// DiskSpace is an amount of free space: Bytes, or Percent of the
// filesystem's size. The zero value means the default of the field that
// holds it; Off disables what it bounds.
type DiskSpace struct {
	Bytes   uint64
	Percent float64
	Off     bool
}

// IsZero reports whether d is the zero value (the field's default).
func (d DiskSpace) IsZero() bool { return d == DiskSpace{} }

// Of returns the bound in bytes on a filesystem of total bytes.
func (d DiskSpace) Of(total uint64) uint64 {
	switch {
	case d.Off:
		return 0
	case d.Percent > 0:
		return uint64(d.Percent / 100 * float64(total))
	default:
		return d.Bytes
	}
}

// String is the bound as a flag spells it: "512MiB"-style bytes, "5%" or
// "off".
func (d DiskSpace) String() string {
	switch {
	case d.Off:
		return "off"
	case d.Percent > 0:
		return fmt.Sprintf("%g%%", d.Percent)
	default:
		return fmt.Sprintf("%dB", d.Bytes)
	}
}

// validate checks a configured bound.
func (d DiskSpace) validate() error {
	if d.Percent < 0 || d.Percent >= 100 {
		return fmt.Errorf("a percentage of the filesystem must be in [0, 100), not %g", d.Percent)
	}
	if d.Percent > 0 && d.Bytes > 0 {
		return fmt.Errorf("give Bytes or Percent, not both")
	}
	return nil
}

// dataFreeCheck is how often the free space of the data directory's
// filesystem is checked; dataFreeWarnEvery how often the warning repeats
// while space stays low (a full disk must not also flood the log).
const (
	dataFreeCheck     = 10 * time.Second
	dataFreeWarnEvery = time.Minute
)

// diskWatch warns, rate-limited, while the data directory's filesystem
// has less free space than the watermark: a full disk stops appends (the
// node can no longer accept writes or follow the leader) and snapshots,
// so the warning comes while there is still room to act.
type diskWatch struct {
	dir       string
	watermark DiskSpace
	log       hclog.Logger
	space     func(string) (free, total uint64, err error) // diskSpace; tests replace it

	low      bool      // below the watermark at the last check
	lastWarn time.Time // when the last WARN was logged
	errLoged bool      // a failed measurement was logged (once)
}

// check measures the free space once and logs what changed: a WARN when
// it falls below the watermark (again every dataFreeWarnEvery while it
// stays there) and an INFO when it is back above.
func (w *diskWatch) check(now time.Time) {
	if w.watermark.Off {
		return
	}
	free, total, err := w.space(w.dir)
	if err != nil {
		if !w.errLoged {
			w.errLoged = true
			w.log.Warn("cannot measure the data directory's free space; the low-space warning is off", "dir", w.dir, "error", err)
		}
		return
	}
	mark := w.watermark.Of(total)
	switch {
	case free < mark:
		if !w.low || now.Sub(w.lastWarn) >= dataFreeWarnEvery {
			w.log.Warn("the data directory's filesystem is nearly full: when it fills, this node stops accepting writes and following the leader until space is freed",
				"dir", w.dir, "free_bytes", free, "size_bytes", total, "watermark", w.watermark.String(), "watermark_bytes", mark)
			w.lastWarn = now
		}
		w.low = true
	case w.low:
		w.low = false
		w.log.Info("the data directory's free space is above the watermark again",
			"dir", w.dir, "free_bytes", free, "watermark_bytes", mark)
	}
}

// diskWatchLoop checks the free space every dataFreeCheck until the node
// closes.
func (n *Node) diskWatchLoop() {
	w := &diskWatch{dir: n.cfg.DataDir, watermark: n.cfg.DataFreeWarn, log: n.log, space: diskSpace}
	if w.watermark.Off {
		return
	}
	t := time.NewTicker(dataFreeCheck)
	defer t.Stop()
	w.check(time.Now())
	for {
		select {
		case <-n.closed:
			return
		case now := <-t.C:
			w.check(now)
		}
	}
}

// dataFree returns the free bytes of the data directory's filesystem, -1
// when it cannot be measured (the metric locknode_data_free_bytes).
func (n *Node) dataFree() float64 {
	free, _, err := diskSpace(n.cfg.DataDir)
	if err != nil {
		return -1
	}
	return float64(free)
}

// dataSize returns the size of the data directory's filesystem, -1 when
// it cannot be measured (locknode_data_size_bytes).
func (n *Node) dataSize() float64 {
	_, total, err := diskSpace(n.cfg.DataDir)
	if err != nil {
		return -1
	}
	return float64(total)
}
