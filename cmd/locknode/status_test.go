package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/httpapi/httpapitest"
	"github.com/locknode/locknode/wire"
)

// leaderless is a node that answers /v1/status without knowing a leader.
func leaderless(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != wire.PathStatus {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(api.Status{ID: "lonely", State: "Candidate", Term: 7,
			Members: []api.Member{{ID: "lonely", Address: "x:1", Suffrage: "Voter"}}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestStatusExitCodes(t *testing.T) {
	good := httpapitest.NewServer(t, httpapitest.NewFake()).URL
	lonely := leaderless(t)
	const dead = "http://127.0.0.1:1"
	cases := []struct {
		name      string
		args      []string
		code      int
		stdout    []string
		stderrHas []string
	}{
		{"leader known", []string{"--endpoints", good}, 0, []string{"leader=fake"}, nil},
		{"no leader", []string{"--endpoints", lonely}, exitLockFailed, []string{"leader=-"}, []string{"no leader known to node lonely"}},
		{"nothing reachable", []string{"--endpoints", dead}, exitLockFailed, nil,
			[]string{"locknode status: nothing listens at 127.0.0.1:1 (connection refused); check --endpoints / LOCKNODE_ENDPOINTS"}},
		{"cluster, all well", []string{"--cluster", "--endpoints", good}, 0, []string{"ENDPOINT", "ROLE", "HEALTH", good, "leader", "ready"}, nil},
		{"cluster, one leaderless one dead", []string{"--cluster", "--endpoints", good + "," + lonely + "," + dead}, exitLockFailed,
			[]string{good, lonely, "candidate", dead, "nothing listens at 127.0.0.1:1"}, []string{"not every node answered with a leader"}},
		{"extra argument", []string{"--endpoints", good, "what"}, exitUsage, nil, nil},
		{"help", []string{"-h"}, 0, []string{"--cluster", "Exit codes"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errb syncBuffer
			code := runStatus(context.Background(), tc.args, &out, &errb)
			if code != tc.code {
				t.Fatalf("code %d, want %d; stdout %s stderr %s", code, tc.code, out.String(), errb.String())
			}
			for _, w := range tc.stdout {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, out.String())
				}
			}
			for _, w := range tc.stderrHas {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, errb.String())
				}
			}
		})
	}
}

func TestStatusClusterJSON(t *testing.T) {
	good := httpapitest.NewServer(t, httpapitest.NewFake()).URL
	lonely := leaderless(t)
	var out, errb syncBuffer
	if code := runStatus(context.Background(), []string{"--cluster", "--json", "--endpoints", good + "," + lonely}, &out, &errb); code != exitLockFailed {
		t.Fatalf("code %d; stderr %s", code, errb.String())
	}
	var nodes []nodeStatus
	if err := json.Unmarshal([]byte(out.String()), &nodes); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(nodes) != 2 || nodes[0].Status == nil || nodes[0].Status.ID != "fake" || nodes[1].Status == nil || nodes[1].Status.Leader != "" {
		t.Fatalf("nodes %+v", nodes)
	}
}
