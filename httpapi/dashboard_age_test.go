package httpapi_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/wire"
)

// TestLocksByAge: the age order holds across pages (offset paging over
// the whole filtered set), both directions, and a set past MaxAgeSorted
// is refused with a hint instead of being sorted.
func TestLocksByAge(t *testing.T) {
	ns := startNodeServer(t, httpapi.Config{})
	ctx := context.Background()
	fillLocks(t, ns.node, 2*httpapi.MaxAgeSorted)
	const n = 30
	for i := 0; i < n; i++ {
		if _, err := ns.node.TryAcquire(ctx, api.AcquireRequest{Key: fmt.Sprintf("age/%02d", (i*7)%n), Owner: "o", TTLMs: 600000}); err != nil {
			t.Fatal(err)
		}
	}
	oldest := func(li api.LockInfo) int64 { return li.Holders[0].GrantedMs }
	for _, order := range []string{"oldest", "newest"} {
		var all []api.LockInfo
		for off := 0; ; {
			var page api.AgeList
			st, raw := ns.get(t, "", "", wire.PathLocksByAge+"?prefix=age/&limit=7&order="+order+"&offset="+fmt.Sprint(off), &page)
			if st != 200 {
				t.Fatalf("%s offset %d: %d %.200s", order, off, st, raw)
			}
			if page.Total != n || page.Offset != off {
				t.Fatalf("%s: total %d offset %d, want %d %d", order, page.Total, page.Offset, n, off)
			}
			all = append(all, page.Locks...)
			off += len(page.Locks)
			if len(page.Locks) == 0 || off >= page.Total {
				break
			}
		}
		if len(all) != n {
			t.Fatalf("%s: %d locks over the pages, want %d", order, len(all), n)
		}
		seen := map[string]bool{}
		for i, li := range all {
			if seen[li.Key] {
				t.Fatalf("%s: %s twice", order, li.Key)
			}
			seen[li.Key] = true
			if i > 0 {
				prev, cur := oldest(all[i-1]), oldest(li)
				if (order == "oldest" && cur < prev) || (order == "newest" && cur > prev) {
					t.Fatalf("%s: %s (granted %d) after %s (granted %d)", order, li.Key, cur, all[i-1].Key, prev)
				}
			}
		}
		// Taken in the order age/00, age/07, age/14… (i*7 mod n), so age
		// order is not key order: the first two have the grant times of
		// age/00 and age/07 (keys granted in the same millisecond may come
		// in either order).
		if order == "oldest" {
			granted := map[string]int64{}
			for _, li := range all {
				granted[li.Key] = oldest(li)
			}
			if oldest(all[0]) != granted["age/00"] || oldest(all[1]) != granted["age/07"] {
				t.Fatalf("oldest first starts %s (granted %d), %s (granted %d); age/00 was granted at %d, age/07 at %d",
					all[0].Key, oldest(all[0]), all[1].Key, oldest(all[1]), granted["age/00"], granted["age/07"])
			}
		}
	}

	for _, bad := range []string{"order=age", "offset=-1", "limit=5000", "offset=x"} {
		if st, raw := ns.get(t, "", "", wire.PathLocksByAge+"?"+bad, nil); st != 400 {
			t.Errorf("%s: %d %.200s, want 400", bad, st, raw)
		}
	}

	if st, raw := ns.get(t, "", "", wire.PathLocksByAge+"?prefix="+url.QueryEscape("bulk/"), nil); st != 400 {
		t.Fatalf("%d held locks under bulk/: %d %.200s, want a refusal", 2*httpapi.MaxAgeSorted, st, raw)
	}
	var hot api.AgeList
	if st, raw := ns.get(t, "", "", wire.PathLocksByAge+"?prefix=hot/", &hot); st != 200 || hot.Total != 2*httpapi.MaxAgeSorted/100 {
		t.Fatalf("hot/: %d %+v %.200s", st, hot.Total, raw)
	}
}
