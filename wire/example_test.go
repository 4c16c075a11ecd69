package wire_test

import (
	"errors"
	"fmt"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/wire"
)

// The server maps an error to its status and code; the client maps the
// code back to the sentinel its callers branch on.
func ExampleStatusOf() {
	refusal := fmt.Errorf("acquire jobs/nightly: %w", api.ErrLocked)
	status, code := wire.StatusOf(refusal)
	fmt.Println(status, code)
	fmt.Println(errors.Is(wire.ErrorOf(code), api.ErrLocked))
	// Output:
	// 423 locked
	// true
}
