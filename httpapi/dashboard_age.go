package httpapi

import (
	"net/http"

	"github.com/locknode/locknode/api"
)

// MaxAgeSorted bounds the locks one age-ordered listing reads and sorts:
// past it the request is refused, and a narrower prefix answers.
const MaxAgeSorted = 10000

func (s *server) locksByAge(w http.ResponseWriter, r *http.Request) {
	q, err := parseLockQuery(r, s.lim)
	switch o := r.URL.Query().Get("order"); {
	case err != nil:
	case o == "":
		q.order = orderOldest
	case o == orderKey:
		err = badOrder(o, orderOldest, orderNewest)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q.filter.State = api.StateHeld
	page, err := s.scanLocks(r, q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.reply(w, r, api.AgeList{Locks: page.Locks, Total: page.Total, Offset: page.Offset}, nil)
}
