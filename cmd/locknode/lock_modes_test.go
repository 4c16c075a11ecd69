package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/httpapi/httpapitest"
)

// holdWhile runs `lock args... -- sh` that marks started and waits for
// proceed; it returns the exit code channel.
func holdWhile(t *testing.T, args []string, started, proceed string) <-chan int {
	t.Helper()
	done := make(chan int, 1)
	script := `touch "$1"; while [ ! -e "$2" ]; do sleep 0.01; done`
	// Ends when runLock returns: the child exits once proceed exists.
	go func() {
		done <- runLock(context.Background(), append(args, "--", "/bin/sh", "-c", script, "sh", started, proceed), &syncBuffer{}, &syncBuffer{})
	}()
	waitUntil(t, "the holder "+started+" to start", func() bool { return fileExists(started) })
	return done
}

// lock --shared: two shared holders run at once, an exclusive one is
// refused while they hold (exit 75), and the holds are shared ones.
// lock --permits 2: two holders run at once, a third is refused.
func TestLockSharedAndPermits(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := httpapitest.NewServer(t, fake)
	dir := t.TempDir()
	proceed := filepath.Join(dir, "proceed")
	try := func(args ...string) int {
		var out, errb syncBuffer
		code := runLock(context.Background(), append(append(args, "--endpoints", srv.URL, "--wait", "0"), "--", "true"), &out, &errb)
		t.Logf("lock %q: exit %d, stderr %s", args, code, errb.String())
		return code
	}
	ep := []string{"--endpoints", srv.URL}

	r1 := holdWhile(t, append([]string{"--shared", "cfg"}, ep...), filepath.Join(dir, "r1"), proceed)
	r2 := holdWhile(t, append([]string{"cfg", "--shared"}, ep...), filepath.Join(dir, "r2"), proceed)
	info, err := fake.Inspect(context.Background(), "cfg", api.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Holders) != 2 || info.Holders[0].Mode != api.ModeShared || info.Holders[1].Mode != api.ModeShared {
		t.Fatalf("holders of cfg: %+v", info.Holders)
	}
	if code := try("cfg"); code != exitLockBusy {
		t.Fatalf("exclusive while shared held: exit %d, want %d", code, exitLockBusy)
	}
	if code := try("--shared", "cfg"); code != 0 {
		t.Fatalf("a third shared holder: exit %d, want 0", code)
	}

	s1 := holdWhile(t, append([]string{"--permits", "2", "enc"}, ep...), filepath.Join(dir, "s1"), proceed)
	s2 := holdWhile(t, append([]string{"--permits", "2", "enc"}, ep...), filepath.Join(dir, "s2"), proceed)
	if code := try("--permits", "2", "enc"); code != exitLockBusy {
		t.Fatalf("a third holder of 2 permits: exit %d, want %d", code, exitLockBusy)
	}
	if info, err := fake.Inspect(context.Background(), "enc", api.ReadOptions{}); err != nil || len(info.Holders) != 2 || info.Holders[0].Mode != api.ModeSemaphore {
		t.Fatalf("holders of enc: %+v %v", info, err)
	}

	if err := os.WriteFile(proceed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i, ch := range []<-chan int{r1, r2, s1, s2} {
		select {
		case code := <-ch:
			if code != 0 {
				t.Errorf("holder %d: exit %d", i, code)
			}
		case <-ctx.Done():
			t.Fatalf("holder %d did not return", i)
		}
	}
	if code := try("enc", "--permits", "2"); code != 0 {
		t.Fatalf("after the holders ended: exit %d", code)
	}
}

func TestLockModeUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--shared", "--permits", "2", "k", "--", "true"},
		{"--permits", "-1", "k", "--", "true"},
		{"--permits", "many", "k", "--", "true"},
	} {
		var out, errb syncBuffer
		if code := runLock(context.Background(), append(args, "--endpoints", "127.0.0.1:1"), &out, &errb); code != exitUsage {
			t.Errorf("%q: exit %d, want %d; stderr %s", args, code, exitUsage, errb.String())
		}
	}
}
