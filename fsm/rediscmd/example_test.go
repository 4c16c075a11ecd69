package rediscmd_test

import (
	"fmt"

	"github.com/locknode/locknode/fsm/rediscmd"
)

// The keys of an EVAL, and the key positions COMMAND lists for it (none:
// its keys move with numkeys).
func ExampleSpec_KeyArgs() {
	args := [][]byte{[]byte("EVAL"), []byte("return 1"), []byte("2"), []byte("a"), []byte("b"), []byte("x")}
	s := rediscmd.LookupBytes(args[0])
	first, last, step := s.KeyRange()
	fmt.Printf("%q %v %d %d %d\n", s.KeyArgs(args), s.Movable(), first, last, step)
	// Output: ["a" "b"] true 0 0 0
}
