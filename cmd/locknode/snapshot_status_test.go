package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/testcluster"
)

// `snapshot status` of a saved backup reports its index and counts
// without a node; damaged files fail with exit 1 and say so.
func TestSnapshotStatus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := testcluster.New(t, 1, testcluster.Options{NoRESP: true})
	if _, err := c.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	l := c.Leader()
	sess, err := l.OpenSession(ctx, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if _, err := l.TryAcquire(ctx, api.AcquireRequest{Key: k, Owner: "o", Session: sess.ID}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (int, string, string) {
		var out, errb syncBuffer
		code := runSnapshot(ctx, args, &out, &errb)
		return code, out.String(), errb.String()
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "backup.snap")
	code, out, errb := run("save", file, "--endpoints", strings.Join(c.Endpoints(), ","))
	if code != 0 {
		t.Fatalf("save: %d %s %s", code, out, errb)
	}
	// "saved the snapshot at index N (...)"
	idx := strings.Fields(strings.SplitN(out, "at index ", 2)[1])[0]

	code, out, errb = run("status", file)
	if code != 0 {
		t.Fatalf("status: %d %s %s", code, out, errb)
	}
	// The version is 1, or the highest once the node activated it by itself.
	if !strings.Contains(out, "cluster version: 1\n") && !strings.Contains(out, fmt.Sprintf("cluster version: %d\n", fsm.MaxClusterVersion)) {
		t.Errorf("status lacks the cluster version:\n%s", out)
	}
	for _, want := range []string{"index:           " + idx + "\n", "locks:           2 ", "sessions:        1\n", "verified:        true", "sha256:"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	code, out, errb = run("status", "--json", file)
	var info snapshotInfo
	if code != 0 || json.Unmarshal([]byte(out), &info) != nil {
		t.Fatalf("status --json: %d %s %s", code, out, errb)
	}
	if strconv.FormatUint(info.Index, 10) != idx || info.Locks != 2 || info.Keys != 2 || info.Sessions != 1 || info.Holds != 2 ||
		!info.Verified || info.Format == 0 || len(info.SHA256) != 64 || info.ClusterTimeMs == 0 {
		t.Fatalf("status --json: %+v", info)
	}

	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string][]byte{
		"truncated": good[:len(good)-3],
		"trailing":  append(append([]byte{}, good...), "junk"...),
		"garbage":   []byte("this is not a snapshot, it is a text file\n"),
		"empty":     nil,
	}
	for name, b := range bad {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errb := run("status", p)
		if code != exitLockFailed || out != "" || !strings.Contains(errb, p) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", name, code, out, errb)
		}
		t.Logf("%s: %s", name, errb)
	}
	for _, p := range []string{filepath.Join(dir, "missing"), dir} {
		if code, _, errb := run("status", p); code != exitLockFailed || !strings.Contains(errb, p) {
			t.Errorf("%s: exit %d, stderr %q", p, code, errb)
		}
	}
	if code, _, _ := run("status"); code != exitUsage {
		t.Errorf("status without FILE: exit %d", code)
	}
}
