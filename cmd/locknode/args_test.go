package main

import (
	"context"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/httpapi/httpapitest"
)

func TestNormalizeArgs(t *testing.T) {
	cases := []struct {
		name      string
		args, out []string
	}{
		{"flags after name", []string{"lock", "job", "--ttl", "5s", "--", "cmd", "-x"},
			[]string{"lock", "job", "--ttl", "5s", "--", "cmd", "-x"}},
		{"flags before name", []string{"lock", "--endpoints", "http://h", "job", "--", "cmd"},
			[]string{"lock", "--endpoints", "http://h", "job", "--", "cmd"}},
		{"single-dash long flags", []string{"lock", "-ttl=5s", "job", "-wait", "1m", "--", "cmd"},
			[]string{"lock", "--ttl=5s", "job", "--wait", "1m", "--", "cmd"}},
		{"bool flag takes no value", []string{"status", "-json", "-endpoints", "h"},
			[]string{"status", "--json", "--endpoints", "h"}},
		{"command without --", []string{"lock", "job", "--ttl", "5s", "cmd", "--ttl", "x"},
			[]string{"lock", "job", "--ttl", "5s", "--", "cmd", "--ttl", "x"}},
		{"elect: two names, then the command", []string{"elect", "e", "v", "-ttl", "5s", "cmd", "-x"},
			[]string{"elect", "e", "v", "--ttl", "5s", "--", "cmd", "-x"}},
		{"unknown flag passed on", []string{"lock", "job", "--bogus", "--", "cmd"},
			[]string{"lock", "job", "--bogus", "--", "cmd"}},
		{"no command", []string{"lock", "job", "--ttl", "5s"},
			[]string{"lock", "job", "--ttl", "5s"}},
		{"value that looks like a flag", []string{"lock", "--endpoints", "-ttl", "job", "--", "c"},
			[]string{"lock", "--endpoints", "-ttl", "job", "--", "c"}},
		{"shorthand untouched", []string{"lock", "-h"}, []string{"lock", "-h"}},
		{"nested command", []string{"members", "-endpoints", "h", "list", "-json"},
			[]string{"members", "--endpoints", "h", "list", "--json"}},
		{"-version", []string{"-version"}, []string{"--version"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := normalizeArgs(newRoot(io.Discard, io.Discard), tc.args); !reflect.DeepEqual(got, tc.out) {
				t.Fatalf("got %q, want %q", got, tc.out)
			}
		})
	}
}

func TestLockFlagsOnBothSidesOfTheName(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := httpapitest.NewServer(t, fake)
	cases := []struct {
		name string
		args []string
	}{
		{"before", []string{"--endpoints", srv.URL, "--ttl", "5s", "k1", "--", "/bin/sh", "-c", "exit 4"}},
		{"after", []string{"k2", "--endpoints", srv.URL, "--", "/bin/sh", "-c", "exit 4"}},
		{"both", []string{"-ttl=5s", "k3", "-endpoints", srv.URL, "--wait", "1s", "--", "/bin/sh", "-c", "exit 4"}},
		{"without --", []string{"k4", "--endpoints", srv.URL, "/bin/sh", "-c", "exit 4"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb syncBuffer
			if code := runLock(context.Background(), tc.args, &out, &errb); code != 4 {
				t.Fatalf("code %d, want the command's 4; stderr %s", code, errb.String())
			}
		})
	}
}

func TestLockHelpListsExitCodes(t *testing.T) {
	var out, errb syncBuffer
	if code := runLock(context.Background(), []string{"-h"}, &out, &errb); code != 0 {
		t.Fatalf("-h exits %d", code)
	}
	for _, want := range []string{"Exit codes:", "75", "127", "LOCKNODE_ENDPOINTS"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("help lacks %q:\n%s", want, out.String())
		}
	}
}

// A cluster without a leader must not look like contention.
func TestLockNoLeaderIsNotBusy(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := httpapitest.NewServer(t, fake)
	fake.Fail(api.ErrNoLeader)
	var out, errb syncBuffer
	code := runLock(context.Background(), []string{"job", "--endpoints", srv.URL, "--wait", "50ms", "--", "true"}, &out, &errb)
	if code != exitLockFailed {
		t.Fatalf("code %d, want %d; stderr %s", code, exitLockFailed, errb.String())
	}
	// The cause is "no leader", or on a slow machine the inspect's own
	// timeout while the node keeps answering 503.
	if !strings.Contains(errb.String(), "the cluster does not answer: no leader") && !strings.Contains(errb.String(), "the cluster does not answer: timed out") {
		t.Fatalf("stderr does not give the cause: %s", errb.String())
	}
}

func TestLockBusySaysWhoHolds(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := httpapitest.NewServer(t, fake)
	if _, err := fake.TryAcquire(context.Background(), api.AcquireRequest{Key: "job", Owner: "backup-7", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	var out, errb syncBuffer
	if code := runLock(context.Background(), []string{"job", "--endpoints", srv.URL, "--wait", "50ms", "--", "true"}, &out, &errb); code != exitLockBusy {
		t.Fatalf("code %d; stderr %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "held by backup-7") {
		t.Fatalf("stderr does not say who holds it: %s", errb.String())
	}
}

func TestDescribeHolders(t *testing.T) {
	cases := []struct {
		name string
		info api.LockInfo
		want []string
	}{
		{"free", api.LockInfo{}, []string{"not held"}},
		{"lock-delay", api.LockInfo{LockDelayMs: 1500}, []string{"free in 1.5s"}},
		{"held", api.LockInfo{Holders: []api.Holder{{Owner: "a", TTLMs: 2500, Deadline: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli()}},
			Waiters: []api.Waiter{{ID: "w"}}},
			[]string{"held by a", "lease ends in 2.5s", "2030-01-02T03:04:05Z", "1 waiting"}},
		{"session", api.LockInfo{Holders: []api.Holder{{Owner: "b", Session: "s1", TTLMs: -1}}}, []string{"held by b (session s1)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := describeHolders(tc.info)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Fatalf("%q lacks %q", got, w)
				}
			}
		})
	}
}

func TestWaitingNotice(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := httpapitest.NewServer(t, fake)
	if _, err := fake.TryAcquire(context.Background(), api.AcquireRequest{Key: "job", Owner: "backup-7", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	endpoints, level := srv.URL, "off"
	empty := ""
	c, err := clientFlags{endpoints: &endpoints, logLevel: &level, caCert: &empty, cert: &empty, key: &empty, user: &empty, password: &empty}.client(&syncBuffer{})
	if err != nil {
		t.Fatal(err)
	}
	var w syncBuffer
	stop := waitingNotice(context.Background(), c, "job", &w)
	waitUntil(t, "the notice", func() bool { return strings.Contains(w.String(), "waiting for job, held by backup-7") })
	stop()
	// Stopped before the delay: nothing printed.
	var quiet syncBuffer
	waitingNotice(context.Background(), c, "job", &quiet)()
	if quiet.String() != "" {
		t.Fatalf("a stopped notice printed %q", quiet.String())
	}
	if isTerminal(&quiet) {
		t.Fatal("a buffer is not a terminal")
	}
}
