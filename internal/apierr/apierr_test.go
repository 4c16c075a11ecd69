package apierr

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// TestEveryRefusalMapped: every refusal the FSM numbers (fsm.ErrorCode)
// has exactly one row, and each maps to an error that both its api and
// its fsm sentinel are found in; anything else passes through, and
// mapping twice changes nothing.
func TestEveryRefusalMapped(t *testing.T) {
	rows := map[error]int{}
	for _, row := range errTable {
		if fsm.ErrorCode(row.fsm) == fsm.CodeUnknown {
			t.Errorf("%v has no fsm code: a forwarded refusal would lose its sentinel", row.fsm)
		}
		rows[row.fsm]++
		err := FromFSM(fmt.Errorf("%w: %q", row.fsm, "k"))
		if !errors.Is(err, row.api) || !errors.Is(err, row.fsm) {
			t.Errorf("%v: mapped to %v", row.fsm, err)
		}
		if again := FromFSM(err); again != err {
			t.Errorf("%v: mapped twice: %v", row.fsm, again)
		}
		if text := err.Error(); !strings.HasPrefix(text, row.api.Error()) || !strings.Contains(text, `"k"`) || strings.Contains(text, "fsm: ") {
			t.Errorf("%v: text %q", row.fsm, text)
		}
	}
	for code := uint8(1); fsm.ErrorOfCode(code) != nil; code++ {
		if e := fsm.ErrorOfCode(code); rows[e] != 1 {
			t.Errorf("%v: %d rows, want 1", e, rows[e])
		}
	}
	for _, err := range []error{nil, api.ErrNoLeader, errors.New("other")} {
		if got := FromFSM(err); got != err {
			t.Errorf("FromFSM(%v) = %v", err, got)
		}
	}
}
