package sim

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/locknode/locknode/testcluster"
)

func TestIdleTmp(t *testing.T) {
	t.Setenv("TMPDIR", "/dev/shm")
	w := time.Now()
	synctest.Test(t, func(t *testing.T) {
		c := testcluster.New(t, 3, testcluster.Options{Network: NewNetwork(1), LogLevel: "off"})
		_ = c
		time.Sleep(60 * time.Second)
	})
	t.Logf("60 s idle in %v", time.Since(w))
}
