package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/httpapi/httpapitest"
	"github.com/locknode/locknode/wire"
)

func TestMembersCommand(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := httpapitest.NewServer(t, fake)
	if err := fake.AddVoter(context.Background(), "n2", "10.0.0.2:7000"); err != nil {
		t.Fatal(err)
	}
	if err := fake.AddVoter(context.Background(), "n3", "10.0.0.3:7000"); err != nil {
		t.Fatal(err)
	}
	members := func() []string {
		st, _ := fake.Status(context.Background())
		var ids []string
		for _, m := range st.Members {
			ids = append(ids, m.ID)
		}
		return ids
	}
	run := func(args ...string) (int, string, string) {
		var out, errb syncBuffer
		code := runMembers(context.Background(), args, &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, _ := run("list", "--endpoints", srv.URL)
	if code != 0 || !strings.Contains(out, "10.0.0.3:7000") {
		t.Fatalf("list: %d %q", code, out)
	}
	code, out, _ = run("--endpoints", srv.URL, "list", "--json")
	var ms []api.Member
	if err := json.Unmarshal([]byte(out), &ms); code != 0 || err != nil || len(ms) != 3 || ms[2].ID != "n3" {
		t.Fatalf("list --json: %d %q %v", code, out, err)
	}
	if code, _, errb := run("remove", "n2", "--endpoints", srv.URL); code != 0 {
		t.Fatalf("remove: %d %s", code, errb)
	}
	if got := strings.Join(members(), ","); got != "fake,n3" {
		t.Fatalf("after remove: %s", got)
	}
	// leave removes the node the endpoint names: this one says it is n3.
	h := httpapi.New(fake, httpapi.Config{})
	n3 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == wire.PathStatus {
			_ = json.NewEncoder(w).Encode(api.Status{ID: "n3", Leader: "fake"})
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(n3.Close)
	if code, out, errb := run("leave", "--endpoints", n3.URL); code != 0 || out != "removed n3\n" {
		t.Fatalf("leave: %d %q %s", code, out, errb)
	}
	if got := strings.Join(members(), ","); got != "fake" {
		t.Fatalf("after leave: %s", got)
	}
	for _, bad := range [][]string{{}, {"frob"}, {"remove"}, {"remove", "a", "b"}, {"list", "x"}, {"leave", "x"}} {
		if code, _, _ := run(append(bad, "--endpoints", srv.URL)...); code != exitUsage {
			t.Errorf("%q: code %d, want %d", bad, code, exitUsage)
		}
	}
	if code, _, errb := run("list", "--endpoints", "http://127.0.0.1:1"); code != exitLockFailed || !strings.Contains(errb, "LOCKNODE_ENDPOINTS") {
		t.Fatalf("unreachable: %d %s", code, errb)
	}
}

func TestReleaseForceCommand(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := httpapitest.NewServer(t, fake)
	if _, err := fake.TryAcquire(context.Background(), api.AcquireRequest{Key: "job", Owner: "stuck", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"without --force", []string{"job", "--endpoints", srv.URL}, exitUsage, ""},
		{"no key", []string{"--force", "--endpoints", srv.URL}, exitUsage, ""},
		{"forced", []string{"job", "--force", "--endpoints", srv.URL}, 0, "released job\n"},
		{"again, JSON", []string{"--force", "--json", "--endpoints", srv.URL, "job"}, 0, `"released": false`},
	}
	for _, tc := range cases {
		var out, errb syncBuffer
		code := runRelease(context.Background(), tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(out.String(), tc.out) {
			t.Fatalf("%s: code %d out %q stderr %s", tc.name, code, out.String(), errb.String())
		}
	}
	if _, _, held := fake.Holder("job"); held {
		t.Fatal("still held after release --force")
	}
}
