package client_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/locknode/locknode/client"
)

// TestClientMethodSet pins the exported methods of *Client. They are
// promoted from the parts the Client embeds, and a name that two parts
// declare at the same depth silently leaves the method set instead of
// failing the build; this catches it, and a method added or removed
// without updating the list.
func TestClientMethodSet(t *testing.T) {
	want := []string{
		"Acquire", "AddVoter", "AddVoterForce", "Campaign", "CloseSession", "Elect", "Extend",
		"FenceCheck", "Inspect", "KeepAlive", "Limits", "List", "Lock", "NewSession", "Observe",
		"OpenSession", "Proclaim", "Ready", "Release", "RemoveServer", "Resign", "Snapshot",
		"SnapshotStream", "Status", "TransferLeadership", "TryAcquire", "TryLock", "Upgrade", "Watch",
	}
	ty := reflect.TypeOf((*client.Client)(nil))
	var got []string
	for i := range ty.NumMethod() {
		got = append(got, ty.Method(i).Name)
	}
	// export_test.go adds test hooks to the test build only.
	got = slices.DeleteFunc(got, func(n string) bool { return n == "LocalWaiters" })
	if !slices.Equal(got, want) {
		t.Fatalf("exported methods of *Client:\n got %v\nwant %v", got, want)
	}
	if n := reflect.TypeOf(client.Client{}).NumMethod(); n != 0 {
		t.Fatalf("Client (not a pointer) has %d methods, want 0: a part is embedded by pointer", n)
	}
}
