package cluster

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

func TestApplyPauseKeepsTheLongest(t *testing.T) {
	m := newMetrics(&Node{})
	for _, d := range []time.Duration{3 * time.Millisecond, 40 * time.Millisecond, time.Millisecond} {
		m.applyPause(d)
	}
	if got := time.Duration(m.maxPause.Load()); got != 40*time.Millisecond {
		t.Fatalf("max pause %v, want 40ms", got)
	}
	var h dto.Metric
	if err := m.applyBatch.Write(&h); err != nil {
		t.Fatal(err)
	}
	if n := h.GetHistogram().GetSampleCount(); n != 3 {
		t.Fatalf("histogram has %d samples, want 3", n)
	}
}
