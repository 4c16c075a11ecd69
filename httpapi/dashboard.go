package httpapi

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/ui"
	"github.com/locknode/locknode/wire"
)

// The dashboard: its page at /ui/ (package ui, embedded in the binary)
// and the data routes the page polls besides the list, inspect and status
// routes every client uses. The page's assets are public, like any
// binary's; its data routes take the same credentials and permissions as
// the rest of the API, so a user sees only the keys its patterns allow.

// peerStatusTimeout bounds one member's status call of the cluster view,
// and peerStatusBytes its answer.
const (
	peerStatusTimeout = time.Second
	peerStatusBytes   = 1 << 20
)

// HistoryReader is the optional lock-history side of a Locker
// (cluster.Node implements it): GET /v1/locks/{key}/history.
type HistoryReader interface {
	History(ctx context.Context, key string) (api.History, error)
}

// ActivityReader is the optional activity side of a Locker
// (cluster.Node implements it): GET /v1/ui/activity.
type ActivityReader interface {
	Activity(ctx context.Context) (api.Activity, error)
}

// PeerLister is the optional membership listing of a Locker
// (cluster.Node implements it): the cluster view asks each member listed
// for its status.
type PeerLister interface {
	PeerHTTPAddrs(ctx context.Context) []api.PeerAddr
}

// mountDashboard adds the dashboard's routes to mux.
func (s *server) mountDashboard(mux *routeMux) {
	mux.Handle("GET "+wire.PathUI, http.StripPrefix(wire.PathUI, ui.Handler()))
	mux.Handle("GET /ui", http.RedirectHandler(wire.PathUI, http.StatusFound))
	mux.Handle("GET /{$}", http.RedirectHandler(wire.PathUI, http.StatusFound))
	mux.HandleFunc("GET "+wire.PathLockPrefix+"{key}"+wire.PathHistory, s.lockGet)
	mux.HandleFunc("GET "+wire.PathActivity, s.activity)
	mux.HandleFunc("GET "+wire.PathClusterView, s.clusterView)
	mux.HandleFunc("GET "+wire.PathLocksByAge, s.locksByAge)
	mux.HandleFunc("GET "+wire.PathUILocks, s.uiLocks)
	mux.HandleFunc("POST "+wire.PathForceRelease, s.forceRelease)
}

// publicPath reports whether a GET of path is one of the dashboard's
// public routes (its assets and the redirects to them).
func publicPath(path string) bool {
	return path == "/" || path == "/ui" || strings.HasPrefix(path, wire.PathUI)
}

// history answers a lock's recent grants (the key's path rules are in
// keypath.go).
func (s *server) history(w http.ResponseWriter, r *http.Request, key string) {
	if err := s.lim.CheckKey(key); err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.allowKeys(w, r, auth.Read, key) {
		return
	}
	hr, ok := s.l.(HistoryReader)
	if !ok {
		s.fail(w, r, fmt.Errorf("%w: this node keeps no lock history", api.ErrNotFound))
		return
	}
	h, err := hr.History(r.Context(), key)
	if err == nil && h.Entries == nil {
		h.Entries = []api.HistoryEntry{}
	}
	s.reply(w, r, h, err)
}

func (s *server) activity(w http.ResponseWriter, r *http.Request) {
	ar, ok := s.l.(ActivityReader)
	if !ok {
		s.fail(w, r, fmt.Errorf("%w: this node keeps no activity samples", api.ErrNotFound))
		return
	}
	a, err := ar.Activity(r.Context())
	s.reply(w, r, a, err)
}

// forceRelease ends whoever holds a key, through the same forced release
// as POST /v1/locks/release with "force", and audits it with the reason.
func (s *server) forceRelease(w http.ResponseWriter, r *http.Request) {
	var req api.ForceReleaseRequest
	if !s.decode(w, r, &req) {
		return
	}
	if err := req.Validate(s.lim); err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.allowKeys(w, r, auth.Admin, req.Key) {
		return
	}
	res, err := s.l.Release(r.Context(), api.ReleaseRequest{Key: req.Key, Force: true})
	s.cfg.Audit.Event(auth.EventForceRelease, userName(r), r.RemoteAddr, "key", req.Key, "released", res.Released, "reason", req.Reason, "via", "dashboard", "error", errText(err))
	s.reply(w, r, &res, err)
}

// clusterView answers every member's status: this node's own, and each
// other member's GET /v1/status, asked in parallel with the caller's
// credentials (members share the users file) and bounded by
// peerStatusTimeout, so a dead member shows as an error, not a hang.
func (s *server) clusterView(w http.ResponseWriter, r *http.Request) {
	st, err := s.l.Status(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if s.cfg.Extra != nil {
		s.cfg.Extra(&st)
	}
	view := api.ClusterView{Node: st.ID, Nodes: []api.NodeView{{ID: st.ID, HTTPAddr: st.HTTPAddr, Self: true, Status: &st}}}
	pl, ok := s.l.(PeerLister)
	if !ok {
		// Only the members' names are known.
		for _, m := range st.Members {
			if m.ID != st.ID {
				view.Nodes = append(view.Nodes, api.NodeView{ID: m.ID, Error: "not asked: this node cannot reach members' HTTP API"})
			}
		}
		s.reply(w, r, view, nil)
		return
	}
	// Members never asked before are asked for their addresses first
	// (about a second at most), then all for their status at once.
	actx, acancel := context.WithTimeout(r.Context(), peerStatusTimeout)
	peers := pl.PeerHTTPAddrs(actx)
	acancel()
	ctx, cancel := context.WithTimeout(r.Context(), peerStatusTimeout)
	defer cancel()
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	for _, p := range peers {
		if !p.Self {
			view.Nodes = append(view.Nodes, api.NodeView{ID: p.ID, HTTPAddr: p.HTTP})
		}
	}
	var wg sync.WaitGroup
	for i := 1; i < len(view.Nodes); i++ {
		nv := &view.Nodes[i] // the slice no longer grows
		if nv.HTTPAddr == "" {
			nv.Error = "unreachable: it has not reported its HTTP address"
			continue
		}
		wg.Add(1)
		// Ends when the call returns, within ctx's peerStatusTimeout.
		go func() {
			defer wg.Done()
			nv.Status, nv.Error = s.peerStatus(ctx, scheme+"://"+nv.HTTPAddr+wire.PathStatus, r.Header.Get("Authorization"))
		}()
	}
	wg.Wait()
	s.reply(w, r, view, nil)
}

// peerStatus asks one member for its status.
func (s *server) peerStatus(ctx context.Context, url, authz string) (*api.Status, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err.Error()
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := s.peerClient.Do(req)
	if err != nil {
		return nil, err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, peerStatusBytes))
	if err != nil {
		return nil, err.Error()
	}
	if resp.StatusCode != http.StatusOK {
		var eb api.ErrorBody
		_ = json.Unmarshal(body, &eb)
		return nil, fmt.Sprintf("status %d: %s", resp.StatusCode, eb.Message)
	}
	var st api.Status
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, "bad status answer: " + err.Error()
	}
	return &st, ""
}

// newPeerClient is the client of the cluster view's member calls.
func newPeerClient(tc *tls.Config) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	tr.MaxIdleConnsPerHost = 2
	return &http.Client{Transport: tr, Timeout: peerStatusTimeout,
		// A member answers its status itself; a redirect is not followed
		// anywhere else with the caller's credentials.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
