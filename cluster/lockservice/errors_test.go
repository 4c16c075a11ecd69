package lockservice

import (
	"errors"
	"testing"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

type wrapped struct {
	sentinel error
	msg      string
}

func (w wrapped) Error() string { return w.msg }
func (w wrapped) Unwrap() error { return w.sentinel }

func fmt_(s error, msg string) error { return wrapped{s, msg} }

func TestAPIErrorTable(t *testing.T) {
	for _, row := range errTable {
		if fsm.ErrorCode(row.fsm) == fsm.CodeUnknown {
			t.Errorf("%v has no fsm code: a forwarded refusal would lose its sentinel", row.fsm)
		}
		err := apiErr(fmt_(row.fsm, "x"))
		if !errors.Is(err, row.api) || !errors.Is(err, row.fsm) {
			t.Errorf("%v: mapped to %v", row.fsm, err)
		}
	}
	if err := apiErr(api.ErrNoLeader); err != api.ErrNoLeader {
		t.Errorf("non-FSM error changed: %v", err)
	}
}
