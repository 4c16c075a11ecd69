package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/fsm"
)

// On a 3-node cluster of serves: `status --cluster` given one follower's
// address finds every member and asks each at its own HTTP address;
// `status` names the leader's HTTP address; `members transfer-leader`
// moves leadership (to a chosen voter, and to raft's pick) through a
// follower's address, and refuses an id that is no member.
func TestClusterToolsOnThreeServes(t *testing.T) {
	nodes := threeServes(t)
	httpOf := map[string]string{}
	for _, n := range nodes {
		httpOf[n[1]] = n[2]
	}
	leader := func() string {
		t.Helper()
		var id string
		waitFor(t, 20*time.Second, "every node to agree on a leader of 3 members", func() (bool, string) {
			ids := map[string]bool{}
			for _, n := range nodes {
				st := getStatus(t, n[2])
				if len(st.Members) != 3 || st.Leader == "" {
					return false, st.ID + " has no leader of 3 members"
				}
				ids[st.Leader] = true
				id = st.Leader
			}
			return len(ids) == 1, "nodes disagree"
		})
		return id
	}
	lead := leader()
	var follower string
	for id := range httpOf {
		if id != lead {
			follower = id
			break
		}
	}

	// Every member shows up with its own answer, found from one endpoint.
	waitFor(t, 20*time.Second, "status --cluster from one follower to show every member", func() (bool, string) {
		code, out, errb := execLine("status", "--cluster", "--json", "--endpoints", httpOf[follower])
		var rows []nodeStatus
		if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 3 {
			return false, out + errb
		}
		leaders := 0
		for _, r := range rows {
			if r.Status == nil || r.Status.ID != r.ID || !strings.HasSuffix(r.Endpoint, httpOf[r.ID]) || !r.Ready || r.Suffrage != "voter" {
				return false, out
			}
			if r.Role == roleLeader {
				leaders++
			} else if r.Role != roleFollower || r.LastContactMs == nil {
				return false, out
			}
		}
		return leaders == 1, out
	})
	waitFor(t, 20*time.Second, "status --cluster's table to show every member", func() (bool, string) {
		code, out, errb := execLine("status", "--cluster", "--endpoints", httpOf[follower])
		for _, id := range []string{"n1", "n2", "n3"} {
			if !strings.Contains(out, httpOf[id]) {
				return false, out
			}
		}
		// The leader activates the highest version by itself.
		return code == 0 && strings.Contains(out, "HEALTH") && strings.Contains(out, fmt.Sprintf("cluster v%d", fsm.MaxClusterVersion)), out + errb
	})

	// Plain status names the leader's HTTP address.
	waitFor(t, 10*time.Second, "status to name the leader's HTTP address", func() (bool, string) {
		code, out, errb := execLine("status", "--endpoints", httpOf[follower])
		return code == 0 && strings.Contains(out, "leader_http="+httpOf[lead]), out + errb
	})

	// To a chosen voter, through a follower's address.
	code, out, errb := execLine("members", "transfer-leader", follower, "--endpoints", httpOf[follower])
	if code != 0 || !strings.Contains(out, "leadership moved from "+lead+" to "+follower) {
		t.Fatalf("transfer-leader %s: exit %d, stdout %q, stderr %q", follower, code, out, errb)
	}
	if now := leader(); now != follower {
		t.Fatalf("leader %s after the transfer to %s", now, follower)
	}
	// To raft's pick, through the old leader's address.
	code, out, errb = execLine("members", "transfer-leader", "--json", "--endpoints", httpOf[lead])
	var res map[string]string
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res["previous"] != follower || res["leader"] == "" || res["leader"] == follower {
		t.Fatalf("transfer-leader: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	if now := leader(); now != res["leader"] {
		t.Fatalf("leader %s, the transfer said %s", now, res["leader"])
	}
	for _, tc := range []struct{ id, want string }{
		{"nosuch", `no such member "nosuch": the voters are n1, n2, n3`},
		{res["leader"], "is already the leader"},
	} {
		code, out, errb = execLine("members", "transfer-leader", tc.id, "--endpoints", httpOf[lead])
		if code != exitLockFailed || !strings.Contains(errb, tc.want) || out != "" {
			t.Fatalf("transfer-leader %s: exit %d, stdout %q, stderr %q", tc.id, code, out, errb)
		}
	}
	if code, _, _ := execLine("members", "transfer-leader", "a", "b"); code != exitUsage {
		t.Fatalf("two ids: exit %d", code)
	}
}
