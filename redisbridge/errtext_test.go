package redisbridge

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/internal/apierr"
)

var internalText = regexp.MustCompile(`(^|: |\()(fsm|cluster|httpapi|redisbridge|client|api|auth|transport|locknode): |Go (struct|value)|of type `)

// Every error reply keeps the prefix clients match on and shows no
// internal package names; a node without quorum says so.
func TestErrorRepliesNameTheCause(t *testing.T) {
	nle := &api.NoLeaderError{ID: "n1", State: "Candidate", For: 3 * time.Second, Voters: 3}
	cases := []struct {
		err    error
		prefix string
		want   string
	}{
		{fmt.Errorf("%w: %w", api.ErrNoLeader, nle), "TRYAGAIN ", "no quorum"},
		{fmt.Errorf("%w: %w (%v)", api.ErrNoLeader, context.DeadlineExceeded, "cluster: no leader known"), "TRYAGAIN ", "no leader reachable, retry later"},
		{context.DeadlineExceeded, "TRYAGAIN ", "timed out"},
		{fmt.Errorf("%w: %q", fsm.ErrNotHeld, "k"), "NOTHELD ", `"k"`},
		{fmt.Errorf("%w: key longer than 10 bytes", fsm.ErrLimit), "LIMIT ", "key longer than 10 bytes"},
		{fmt.Errorf("%w: %w: %q", api.ErrNotOwner, fsm.ErrNotOwner, "k"), "NOTOWNER ", `"k"`},
		{fmt.Errorf("cluster: something: %w", fmt.Errorf("fsm: deeper")), "ERR ", "something: deeper"},
	}
	for _, row := range errorTexts {
		cases = append(cases, struct {
			err    error
			prefix string
			want   string
		}{fmt.Errorf("%w: %q", row.err, "key"), strings.SplitN(row.text, " ", 2)[0] + " ", ""})
	}
	for _, c := range cases {
		got := errorText(c.err)
		if !strings.HasPrefix(got, c.prefix) || !strings.Contains(got, c.want) {
			t.Errorf("errorText(%v) = %q, want prefix %q containing %q", c.err, got, c.prefix, c.want)
		}
		if m := internalText.FindString(got); m != "" {
			t.Errorf("errorText(%v) = %q shows an internal name (%q)", c.err, got, m)
		}
	}
}

// TestFSMRefusalsOneText: a refusal of the key space has one wire text
// whichever path brings it — straight from an Apply's Result.Err or
// through the lock service, which maps it to its api error first — and
// never the generic "ERR" with the FSM's own words.
func TestFSMRefusalsOneText(t *testing.T) {
	for code := uint8(1); fsm.ErrorOfCode(code) != nil; code++ {
		raw := fmt.Errorf("%w: %q", fsm.ErrorOfCode(code), "k")
		direct, viaAPI := errorText(raw), errorText(apierr.FromFSM(raw))
		if direct != viaAPI {
			t.Errorf("%v: %q straight, %q through the api", raw, direct, viaAPI)
		}
		if m := internalText.FindString(direct); m != "" || strings.HasPrefix(direct, "ERR fsm") {
			t.Errorf("%v: %q", raw, direct)
		}
	}
}
