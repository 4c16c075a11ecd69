package redisbridge

import (
	"slices"
	"testing"

	"github.com/locknode/locknode/fsm/rediscmd"
)

// TestCatalogueServed: the bridge serves every command of the catalogue
// and nothing else; each table entry carries its own catalogue entry; the
// key space's commands without a handler here go to cmdData, and the
// only key-space commands with one are PING and PUBLISH (the key space
// runs them for scripts).
func TestCatalogueServed(t *testing.T) {
	cmds := commandTable()
	for _, s := range rediscmd.All() {
		if cmds[s.Name] == nil {
			t.Errorf("%s: in the catalogue, not served", s.Name)
		}
	}
	var own []string
	for name, cmd := range cmds {
		if cmd.spec != rediscmd.Lookup(name) || cmd.name != name {
			t.Errorf("%s: table entry %q with catalogue entry %v", name, cmd.name, cmd.spec)
		}
		data := cmd.flags&flagData != 0
		if data && cmd.spec.Flags&rediscmd.KeySpace == 0 {
			t.Errorf("%s: served by cmdData, not a key-space command", name)
		}
		if !data && cmd.spec.Flags&rediscmd.KeySpace != 0 {
			own = append(own, name)
		}
	}
	slices.Sort(own)
	if !slices.Equal(own, []string{"ping", "publish"}) {
		t.Errorf("key-space commands with a handler of their own: %v", own)
	}
}
