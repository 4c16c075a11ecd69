package cluster

import (
	"testing"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster/lockservice"
	"github.com/locknode/locknode/fsm"
)

// TestDefaultLimitsAgree: the request limits every front end checks
// (api.DefaultLimits) are the FSM's defaults, so a request the front ends
// let through is not refused later by the FSM's own check, and the
// reverse.
func TestDefaultLimitsAgree(t *testing.T) {
	if got, want := lockservice.LimitsOf(fsm.DefaultConfig()), api.DefaultLimits(); got != want {
		t.Fatalf("fsm.DefaultConfig gives limits %+v, api.DefaultLimits %+v", got, want)
	}
	if err := api.DefaultLimits().Validate(); err != nil {
		t.Fatal(err)
	}
}
