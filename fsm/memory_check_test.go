package fsm

import "fmt"

// checkMemory compares the running memory counts with a recount from the
// state: the table's, each collection's and the request ids'.
func checkMemory(t *Table) error {
	for k, v := range t.keys {
		if v.Kind() != KindLock && v.Kind() != KindString {
			if got, want := v.valueData.mem, scanBody(v); got != want {
				return fmt.Errorf("%q: collection counts %d bytes, holds %d", k, got, want)
			}
		}
	}
	if got, want := t.mem, t.recountMemory(); got != want {
		return fmt.Errorf("memory counted %d, recount %d", got, want)
	}
	var reqs int64
	t.reqs.live(func(e *reqEntry) { reqs += reqBytes(e) })
	if got := t.reqs.bytes; got != reqs {
		return fmt.Errorf("request ids counted %d bytes, recount %d", got, reqs)
	}
	return nil
}
