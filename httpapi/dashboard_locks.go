package httpapi

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/locknode/locknode/api"
)

// MaxUIScan bounds the keys one key-ordered listing reads: past it the
// answer is marked partial (totals of the keys read), and a narrower
// prefix gives exact ones. An age order must read every match and keeps
// MaxAgeSorted.
const MaxUIScan = 10000

// uiScanBound is MaxUIScan; tests lower it.
var uiScanBound = MaxUIScan

// Orders of a listing.
const (
	orderKey    = "key"
	orderOldest = "oldest"
	orderNewest = "newest"
)

// maxUIPage bounds one page of a listing.
const maxUIPage = 1000

// lockQuery is a parsed listing request.
type lockQuery struct {
	prefix        string
	stale         bool
	order         string
	offset, limit int
	filter        api.LockFilter
}

func badOrder(got string, want ...string) error {
	return fmt.Errorf("%w: order %q: want %s", api.ErrBadRequest, got, strings.Join(want, " or "))
}

// parseLockQuery reads a listing's query parameters.
func parseLockQuery(r *http.Request, lim api.Limits) (lockQuery, error) {
	v := r.URL.Query()
	q := lockQuery{prefix: v.Get("prefix"), order: v.Get("order"), limit: 100}
	switch q.order {
	case "":
		q.order = orderKey
	case orderKey, orderOldest, orderNewest:
	default:
		return q, badOrder(q.order, orderKey, orderOldest, orderNewest)
	}
	for _, p := range []struct {
		name string
		dst  *int
		max  int
	}{{"offset", &q.offset, MaxUIScan}, {"limit", &q.limit, maxUIPage}} {
		s := v.Get(p.name)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > p.max {
			return q, fmt.Errorf("%w: %s %q: want 0 to %d", api.ErrBadRequest, p.name, s, p.max)
		}
		*p.dst = n
	}
	var err error
	if q.stale, err = boolParam(r, "stale"); err != nil {
		return q, err
	}
	q.filter.State, q.filter.Owner = v.Get("state"), v.Get("owner")
	for _, m := range v["meta"] {
		if m == "" {
			continue // an empty box on the page
		}
		t, err := api.ParseMetaTerm(m)
		if err != nil {
			return q, err
		}
		q.filter.Meta = append(q.filter.Meta, t)
	}
	if err := q.filter.Validate(lim); err != nil {
		return q, err
	}
	lr := api.ListRequest{Prefix: q.prefix}
	return q, lr.Validate(lim)
}

func (s *server) uiLocks(w http.ResponseWriter, r *http.Request) {
	q, err := parseLockQuery(r, s.lim)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page, err := s.scanLocks(r, q)
	s.reply(w, r, page, err)
}

// scanLocks reads every lock under q.prefix the caller may see, keeps
// those q.filter matches, totals them and cuts out the page asked for.
// In key order it keeps only that page (memory bounded by the page,
// reading by MaxUIScan keys); in age order it keeps every match to sort them,
// up to MaxAgeSorted.
func (s *server) scanLocks(r *http.Request, q lockQuery) (api.LockPage, error) {
	// Each List call walks the node's whole key table while applies wait
	// for it; pages of a thousand keep each wait short at about the same
	// total cost as fewer, larger pages.
	req := api.ListRequest{Prefix: q.prefix, Limit: maxUIPage, ReadOptions: api.ReadOptions{Stale: q.stale}}
	byAge := q.order != orderKey
	var (
		tally   api.LockTally
		kept    []api.LockInfo
		read    int
		partial bool
	)
	for {
		res, err := s.l.List(r.Context(), req)
		if err != nil {
			return api.LockPage{}, err
		}
		u := userOf(r)
		for i := range res.Locks {
			if !byAge && read == uiScanBound {
				partial = true
				break
			}
			read++
			li := &res.Locks[i]
			if (u != nil && !u.Key(li.Key)) || !q.filter.Match(li) {
				continue
			}
			if byAge || (tally.Locks >= q.offset && tally.Locks < q.offset+q.limit) {
				kept = append(kept, *li)
			}
			tally.Add(li)
		}
		if byAge && len(kept) > MaxAgeSorted {
			return api.LockPage{}, fmt.Errorf("%w: more than %d locks match prefix %q; narrow it to order them by age", api.ErrLimit, MaxAgeSorted, q.prefix)
		}
		if partial || res.Next == "" {
			break
		}
		req.After = res.Next
	}
	page := api.LockPage{Total: tally.Locks, Offset: q.offset, Totals: tally.LockTotals, Partial: partial, Locks: []api.LockInfo{}}
	if !byAge {
		if kept != nil {
			page.Locks = kept
		}
		return page, nil
	}
	sortByAge(kept, q.order == orderNewest)
	if q.offset < len(kept) {
		page.Locks = kept[q.offset:min(len(kept), q.offset+q.limit)]
	}
	return page, nil
}

// sortByAge orders locks by their oldest hold's grant time, oldest first
// (newest first with newest), free locks last either way. A hold restored
// from an older snapshot has no grant time and sorts as the oldest.
func sortByAge(locks []api.LockInfo, newest bool) {
	granted := func(li api.LockInfo) int64 {
		g := li.Holders[0].GrantedMs
		for _, h := range li.Holders[1:] {
			g = min(g, h.GrantedMs)
		}
		return g
	}
	slices.SortStableFunc(locks, func(a, b api.LockInfo) int {
		switch ha, hb := len(a.Holders) > 0, len(b.Holders) > 0; {
		case !ha && !hb:
			return 0
		case !ha:
			return 1
		case !hb:
			return -1
		}
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
}
