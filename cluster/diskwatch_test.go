package cluster

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDiskWatchWarnsUnderTheWatermark(t *testing.T) {
	var logs logBuffer
	free := uint64(900)
	w := &diskWatch{dir: "/data", watermark: DiskSpace{Percent: 5}, log: bufLogger(&logs),
		space: func(string) (uint64, uint64, error) { return free, 10000, nil }}
	warns := func() int {
		return strings.Count(logs.String(), "[WARN]  the data directory's filesystem is nearly full")
	}
	t0 := time.Unix(1000, 0)
	w.check(t0) // 9% free: above 5%
	if warns() != 0 {
		t.Fatalf("warned at 9%% free:\n%s", logs.String())
	}
	free = 400 // 4%
	w.check(t0.Add(10 * time.Second))
	if warns() != 1 || !strings.Contains(logs.String(), "free_bytes=400") || !strings.Contains(logs.String(), "watermark_bytes=500") {
		t.Fatalf("no WARN with the numbers at 4%% free:\n%s", logs.String())
	}
	w.check(t0.Add(20 * time.Second))
	w.check(t0.Add(50 * time.Second))
	if warns() != 1 {
		t.Fatalf("%d WARNs within a minute; want 1 (rate-limited)", warns())
	}
	w.check(t0.Add(71 * time.Second))
	if warns() != 2 {
		t.Fatalf("%d WARNs after a minute below; want 2", warns())
	}
	free = 5000
	w.check(t0.Add(80 * time.Second))
	if !strings.Contains(logs.String(), "above the watermark again") {
		t.Fatalf("no INFO when space came back:\n%s", logs.String())
	}

	// An absolute watermark.
	w.watermark = DiskSpace{Bytes: 6000}
	w.check(t0.Add(90 * time.Second))
	if warns() != 3 || !strings.Contains(logs.String(), "watermark_bytes=6000") {
		t.Fatalf("no WARN under a 6000-byte watermark:\n%s", logs.String())
	}

	// Off: nothing measured, nothing logged.
	w.watermark = DiskSpace{Off: true}
	w.space = func(string) (uint64, uint64, error) { t.Fatal("measured with the watermark off"); return 0, 0, nil }
	w.check(t0.Add(time.Hour))

	// A failed measurement is logged once.
	w.watermark = DiskSpace{Percent: 5}
	w.space = func(string) (uint64, uint64, error) { return 0, 0, errors.New("statfs: EIO") }
	w.check(t0.Add(2 * time.Hour))
	w.check(t0.Add(3 * time.Hour))
	if n := strings.Count(logs.String(), "cannot measure"); n != 1 {
		t.Fatalf("%d logs of a failed measurement; want 1", n)
	}
}

func TestDataFreeMetric(t *testing.T) {
	n := adapterNode(t)
	want, total, err := diskSpace(n.cfg.DataDir)
	if err != nil {
		t.Skipf("free space is not measured here: %v", err)
	}
	got := gaugeValue(t, n, "locknode_data_free_bytes")
	// Other writers share the filesystem: within 64 MiB.
	if diff := got - float64(want); diff > 64<<20 || diff < -64<<20 {
		t.Errorf("locknode_data_free_bytes = %.0f, statfs says %d", got, want)
	}
	if got := gaugeValue(t, n, "locknode_data_size_bytes"); got != float64(total) {
		t.Errorf("locknode_data_size_bytes = %.0f, want %d", got, total)
	}
}

func TestDiskSpaceValidate(t *testing.T) {
	for _, d := range []DiskSpace{{Percent: -1}, {Percent: 100}, {Percent: 5, Bytes: 1}} {
		cfg := DefaultConfig()
		cfg.ID, cfg.DataDir, cfg.DataFreeWarn = "n1", t.TempDir(), d
		if err := cfg.withDefaults().Validate(); err == nil {
			t.Errorf("DataFreeWarn %+v validated", d)
		}
	}
}

// gaugeValue reads one gauge from n's registry.
func gaugeValue(t *testing.T, n *Node, name string) float64 {
	t.Helper()
	mfs, err := n.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
