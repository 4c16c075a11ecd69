package httpapi

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/locknode/locknode/api"
)

// PathLocksByAge lists held locks ordered by the age of their oldest
// hold: GET ?prefix=&order=oldest|newest&offset=&limit=&stale= →
// api.AgeList. The dashboard's "sort by age".
const PathLocksByAge = "/v1/ui/locks-by-age"

// MaxAgeSorted bounds the locks one age-ordered listing reads and sorts:
// past it the request is refused, and a narrower prefix answers.
const MaxAgeSorted = 10000

func (s *server) locksByAge(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	newest := false
	switch q.Get("order") {
	case "", "oldest":
	case "newest":
		newest = true
	default:
		s.fail(w, r, fmt.Errorf("%w: order %q: want oldest or newest", api.ErrBadRequest, q.Get("order")))
		return
	}
	offset, limit := 0, 100
	for _, p := range []struct {
		name string
		dst  *int
		max  int
	}{{"offset", &offset, MaxAgeSorted}, {"limit", &limit, 1000}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > p.max {
			s.fail(w, r, fmt.Errorf("%w: %s %q: want 0 to %d", api.ErrBadRequest, p.name, v, p.max))
			return
		}
		*p.dst = n
	}
	stale, err := boolParam(r, "stale")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	req := api.ListRequest{Prefix: q.Get("prefix"), Limit: 1000, ReadOptions: api.ReadOptions{Stale: stale}}
	if err := req.Validate(s.lim); err != nil {
		s.fail(w, r, err)
		return
	}
	var held []api.LockInfo
	for {
		page, err := s.l.List(r.Context(), req)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		for _, li := range visible(r, page.Locks) {
			if len(li.Holders) > 0 {
				held = append(held, li)
			}
		}
		if len(held) > MaxAgeSorted {
			s.fail(w, r, fmt.Errorf("%w: more than %d held locks match prefix %q; narrow it to order them by age", api.ErrLimit, MaxAgeSorted, req.Prefix))
			return
		}
		if page.Next == "" {
			break
		}
		req.After = page.Next
	}
	// The age of a lock is its oldest hold's; a hold restored from an
	// older snapshot has no grant time and sorts as the oldest.
	granted := func(li api.LockInfo) int64 {
		g := li.Holders[0].GrantedMs
		for _, h := range li.Holders[1:] {
			g = min(g, h.GrantedMs)
		}
		return g
	}
	slices.SortStableFunc(held, func(a, b api.LockInfo) int {
		ga, gb := granted(a), granted(b)
		if newest {
			ga, gb = gb, ga
		}
		switch {
		case ga < gb:
			return -1
		case ga > gb:
			return 1
		}
		return 0
	})
	out := api.AgeList{Total: len(held), Offset: offset, Locks: []api.LockInfo{}}
	if offset < len(held) {
		out.Locks = held[offset:min(len(held), offset+limit)]
	}
	s.reply(w, r, out, nil)
}
