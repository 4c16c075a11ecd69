package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/httpapi/httpapitest"
)

func TestCommandMeta(t *testing.T) {
	long := strings.Repeat("x", 300)
	cases := []struct {
		name string
		args []string
		want string // the cmd value; "" checks only the bounds
	}{
		{"plain", []string{"pg_dump", "-Fc", "db"}, "pg_dump -Fc db"},
		{"quoted", []string{"sh", "-c", "echo it's $HOME"}, `sh -c 'echo it'\''s $HOME'`},
		{"empty argument", []string{"cp", "", "x"}, "cp '' x"},
		{"invalid utf-8", []string{"echo", "a\xffb"}, "echo a\uFFFDb"},
		{"too long", []string{"echo", long}, "echo " + long[:api.DefaultMaxMetaValueBytes-len("echo ")-3] + "..."},
		{"cut inside a character", []string{strings.Repeat("é", 200)}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := commandMeta(tc.args, api.DefaultLimits())[api.MetaCmd]
			if tc.want != "" && got != tc.want {
				t.Fatalf("cmd %q, want %q", got, tc.want)
			}
			if len(got) > api.DefaultMaxMetaValueBytes || !utf8.ValidString(got) {
				t.Fatalf("cmd of %d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
			}
			m := api.DefaultLimits().WithProcessMeta(commandMeta(tc.args, api.DefaultLimits()))
			if err := api.DefaultLimits().CheckMeta(m); err != nil || m[api.MetaPID] == "" {
				t.Fatalf("with the defaults: %v %v", m, err)
			}
		})
	}
	// Limits too small for it: left out, never a refused lock.
	if m := commandMeta([]string{"x"}, api.Limits{MaxMetaBytes: 8}); m != nil {
		t.Fatalf("no room, yet %v", m)
	}
}

// TestLockRecordsWhoHolds: while `locknode lock` runs its command, the
// hold carries the host, pid and command line, and `locknode locks` and
// the busy message show them with the grant time.
func TestLockRecordsWhoHolds(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := httpapitest.NewServer(t, fake)
	gate := filepath.Join(t.TempDir(), "go")
	r := startLock(t, "job", "--endpoints", srv.URL, "--", "sh", "-c", "while [ ! -e "+gate+" ]; do sleep 0.01; done")
	defer func() {
		os.WriteFile(gate, nil, 0o644)
		if code := r.wait(t); code != 0 {
			t.Errorf("lock exited %d: %s", code, r.stderr.String())
		}
	}()
	var info api.LockInfo
	waitUntil(t, "the hold", func() bool {
		var err error
		info, err = fake.Inspect(context.Background(), "job", api.ReadOptions{})
		return err == nil && len(info.Holders) == 1
	})
	host, _ := os.Hostname()
	m := info.Holders[0].Meta
	if m[api.MetaHost] != host || m[api.MetaPID] != strconv.Itoa(os.Getpid()) || !strings.HasPrefix(m[api.MetaCmd], "sh -c 'while [ ! -e ") {
		t.Fatalf("meta %v", m)
	}

	var out, errb syncBuffer
	if code := runLocks(context.Background(), []string{"--endpoints", srv.URL}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "pid="+strconv.Itoa(os.Getpid())) || !strings.Contains(out.String(), ",since=") {
		t.Fatalf("locks: %d %s %s", code, out.String(), errb.String())
	}
	var busy syncBuffer
	if code := runLock(context.Background(), []string{"job", "--endpoints", srv.URL, "--wait", "0", "--", "true"}, &out, &busy); code != exitLockBusy ||
		!strings.Contains(busy.String(), "cmd=") || !strings.Contains(busy.String(), ", since ") {
		t.Fatalf("busy: %d %s", code, busy.String())
	}
}

func TestDescribeHoldersMeta(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	info := api.LockInfo{Holders: []api.Holder{{Owner: "a", TTLMs: -1,
		Meta: map[string]string{"pid": "42", "host": "db1", "cmd": "pg_dump -Fc"}, GrantedMs: now.Add(-90 * time.Second).UnixMilli()}}}
	got := describeHoldersAt(info, now)
	want := `held by a [cmd="pg_dump -Fc" host=db1 pid=42], since 2030-01-02T03:02:35Z (1m30s ago)`
	if got != want {
		t.Fatalf("%q\nwant %q", got, want)
	}
}
