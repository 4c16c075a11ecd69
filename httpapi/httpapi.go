package httpapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/internal/oteltrace"
	"github.com/locknode/locknode/wire"
)

// Defaults of the Config fields that are zero.
const (
	DefaultMaxBodyBytes   = 1 << 20
	DefaultBodyTimeout    = 30 * time.Second
	DefaultHeaderTimeout  = 10 * time.Second
	DefaultIdleTimeout    = 2 * time.Minute
	DefaultMaxHeaderBytes = 64 << 10
	DefaultMaxConns       = 10000
	// DefaultMaxConnsPerAddr leaves 9/10 of DefaultMaxConns to other
	// addresses while one proxy or NAT gateway keeps room for a large pool.
	DefaultMaxConnsPerAddr = 1000
)

// Config configures the handler. The zero value is usable.
type Config struct {
	// Logger receives one line per failed request (Warn for 5xx, Debug
	// otherwise). Default: a null logger.
	Logger hclog.Logger
	// MaxBodyBytes bounds a request body; a larger one is refused with
	// 413 "limit" (at once when its Content-Length says so, else once that
	// many bytes have arrived). The body buffer grows with the bytes
	// received, never from the declared length. Default
	// DefaultMaxBodyBytes (1 MiB).
	MaxBodyBytes int64
	// BodyTimeout bounds receiving a request body, from the end of its
	// header; a body still incomplete then is answered 408 and its
	// connection closed. Only the body: a blocking acquire's wait after
	// it is not limited. Default DefaultBodyTimeout (30s).
	BodyTimeout time.Duration
	// HeaderTimeout bounds receiving a request's header
	// (http.Server.ReadHeaderTimeout, used by NewServer). Default
	// DefaultHeaderTimeout (10s).
	HeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no new
	// request for this long (http.Server.IdleTimeout, used by NewServer).
	// Default DefaultIdleTimeout (2m), above the Go client's 90 s idle
	// pool timeout, so clients normally close first.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's header (http.Server.MaxHeaderBytes,
	// used by NewServer); a larger one is answered 431. Default
	// DefaultMaxHeaderBytes (64 KiB).
	MaxHeaderBytes int
	// MaxConns bounds the open connections of a listener wrapped by
	// LimitListener; one past it is answered 503 too_many_connections and
	// closed. Default DefaultMaxConns (10,000).
	MaxConns int
	// MaxConnsPerAddr bounds the open connections from one source IP of a
	// listener wrapped by LimitListener; one past it is answered 503
	// too_many_connections and closed. Default DefaultMaxConnsPerAddr
	// (1,000); negative: none.
	MaxConnsPerAddr int
	// AuthThrottle delays the answers to repeated wrong Basic credentials
	// and asks to close a connection after too many (see auth.Throttle);
	// share one with the RESP bridge so a source address is counted
	// across both. Nil: a Throttle with the defaults, when Users is set.
	AuthThrottle *auth.Throttle
	// Metrics, when set, is served at GET /metrics (a Prometheus handler).
	Metrics http.Handler
	// Registerer, when set, receives the API's own metrics:
	// locknode_http_requests_total{route,code} and
	// locknode_http_request_duration_seconds{route}. Nil: not measured.
	Registerer prometheus.Registerer
	// Extra, when set, fills node-level fields of GET /v1/status that the
	// Locker does not know (HTTP and RESP addresses, mirror state). It is
	// called after Locker.Status succeeded and must not block.
	Extra func(*api.Status)
	// Ready, when set, decides GET /readyz: nil means this node serves
	// (200), an error is answered 503 with its text. Without it /readyz
	// asks the Locker's Status for a known leader.
	Ready func(context.Context) error
	// Users, when set, turns on authentication (HTTP Basic) and
	// permissions (auth.go). Nil: every request is allowed.
	Users *auth.Store
	// Audit receives forced releases and membership changes and counts
	// refused requests. Nil: not audited.
	Audit *auth.Audit
	// MaxWatchers bounds the blocking queries (GET /v1/locks... with
	// ?index=) waiting on this node at once; one past it is answered 503
	// too_many_watchers. Default DefaultMaxWatchers (10,000); negative:
	// none.
	MaxWatchers int
	// PeerTLS configures the calls the dashboard's cluster view makes to
	// the other members' HTTPS API (their GET /v1/status) when this node
	// serves HTTPS. Nil: the system's roots.
	PeerTLS *tls.Config
	// TracerProvider makes a span of each request (trace.go), continuing
	// the caller's W3C trace context. Nil: no spans.
	TracerProvider trace.TracerProvider
}

// Validate reports a configuration error. Zero fields are valid (they
// take the defaults).
func (c Config) Validate() error {
	switch {
	case c.MaxBodyBytes < 0:
		return fmt.Errorf("httpapi: MaxBodyBytes %d is negative", c.MaxBodyBytes)
	case c.BodyTimeout < 0, c.HeaderTimeout < 0, c.IdleTimeout < 0:
		return fmt.Errorf("httpapi: timeouts must not be negative (body %v, header %v, idle %v)", c.BodyTimeout, c.HeaderTimeout, c.IdleTimeout)
	case c.MaxHeaderBytes < 0:
		return fmt.Errorf("httpapi: MaxHeaderBytes %d is negative", c.MaxHeaderBytes)
	case c.MaxConns < 0:
		return fmt.Errorf("httpapi: MaxConns %d is negative", c.MaxConns)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.BodyTimeout == 0 {
		c.BodyTimeout = DefaultBodyTimeout
	}
	if c.HeaderTimeout == 0 {
		c.HeaderTimeout = DefaultHeaderTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxHeaderBytes == 0 {
		c.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.MaxConnsPerAddr == 0 {
		c.MaxConnsPerAddr = DefaultMaxConnsPerAddr
	}
	if c.MaxWatchers == 0 {
		c.MaxWatchers = DefaultMaxWatchers
	}
	if c.AuthThrottle == nil && c.Users != nil {
		c.AuthThrottle = auth.NewThrottle(auth.ThrottleConfig{Logger: c.Logger})
	}
	return c
}

type server struct {
	l   api.Locker
	cfg Config
	lim api.Limits // the Locker's (api.LimitsOf): every request is validated with them

	peerClient *http.Client // the dashboard's cluster view (dashboard.go)

	changes  ChangeWaiter              // the Locker's, when it has one (watch.go)
	watchers atomic.Int64              // blocking queries waiting (watch.go)
	reads    sharedReads[api.LockInfo] // blocking queries' answers (watchread.go)
}

// New returns the HTTP handler of the lock API served by l. It panics only
// if cfg is invalid (a programming error); call cfg.Validate first to get
// an error instead.
func New(l api.Locker, cfg Config) http.Handler {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	s := &server{l: l, cfg: cfg.withDefaults(), lim: api.LimitsOf(l), peerClient: newPeerClient(cfg.PeerTLS)}
	s.changes, _ = l.(ChangeWaiter)
	mux := newRouteMux()
	mux.HandleFunc("POST "+wire.PathAcquire, s.acquire)
	mux.HandleFunc("POST "+wire.PathTry, s.try)
	mux.HandleFunc("POST "+wire.PathRelease, s.release)
	mux.HandleFunc("POST "+wire.PathExtend, s.extend)
	mux.HandleFunc("GET "+wire.PathLocks, s.list)
	// Inspect and history (dashboard.go) take the key as the rest of the
	// path; lockGet tells them apart (keypath.go).
	mux.HandleFunc("GET "+wire.PathLockPrefix+"{key...}", s.lockGet)
	mux.HandleFunc("POST "+wire.PathSessions, s.openSession)
	mux.HandleFunc("PUT "+wire.PathSessions+"/{id}/keepalive", s.keepAlive)
	mux.HandleFunc("POST "+wire.PathSessions+"/{id}/keepalive", s.keepAlive)
	mux.HandleFunc("DELETE "+wire.PathSessions+"/{id}", s.closeSession)
	mux.HandleFunc("POST "+wire.PathElections+"{name}/campaign", s.campaign)
	mux.HandleFunc("POST "+wire.PathElections+"{name}/resign", s.resign)
	mux.HandleFunc("POST "+wire.PathElections+"{name}/proclaim", s.proclaim)
	mux.HandleFunc("GET "+wire.PathElections+"{name}/observe", s.observe)
	mux.HandleFunc("POST "+wire.PathFenceCheck, s.fenceCheck)
	mux.HandleFunc("GET "+wire.PathStatus, s.status)
	mux.HandleFunc("GET "+wire.PathLivez, s.livez)
	mux.HandleFunc("GET "+wire.PathReadyz, s.readyz)
	mux.HandleFunc("GET "+wire.PathOpenAPI, s.openAPI)
	if m, ok := l.(Membership); ok {
		mux.HandleFunc("POST "+wire.PathMembers, func(w http.ResponseWriter, r *http.Request) { s.addMember(w, r, m) })
		mux.HandleFunc("DELETE "+wire.PathMembers+"/{id}", func(w http.ResponseWriter, r *http.Request) { s.removeMember(w, r, m) })
	}
	if lt, ok := l.(LeaderTransferer); ok {
		mux.HandleFunc("POST "+wire.PathTransferLeader, func(w http.ResponseWriter, r *http.Request) { s.transferLeader(w, r, lt) })
	}
	if u, ok := l.(Upgrader); ok {
		mux.HandleFunc("POST "+wire.PathClusterUpgrade, func(w http.ResponseWriter, r *http.Request) { s.upgrade(w, r, u) })
	}
	if sn, ok := l.(Snapshotter); ok {
		mux.HandleFunc("GET "+wire.PathSnapshot, func(w http.ResponseWriter, r *http.Request) { s.snapshot(w, r, sn) })
	}
	if cfg.Metrics != nil {
		mux.Handle("GET "+wire.PathMetrics, cfg.Metrics)
	}
	s.mountDashboard(mux)
	// Everything else answers a JSON 404, so clients only ever parse one
	// error shape.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, fmt.Errorf("%w: no route %s %s", api.ErrNotFound, r.Method, r.URL.Path))
	})
	rt := &router{s: s, mux: mux}
	var h http.Handler = rt
	if cfg.Registerer != nil {
		m, err := newRouteMetrics(cfg.Registerer)
		if err == nil {
			err = cfg.Registerer.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "locknode_http_watchers",
				Help: "Blocking queries (GET /v1/locks... with index) waiting now; --max-watchers bounds them.",
			}, func() float64 { return float64(s.watchers.Load()) }))
		}
		if err != nil {
			panic(fmt.Errorf("httpapi: registering metrics: %w", err))
		}
		h = &measured{rt: rt, m: m}
	}
	if cfg.TracerProvider != nil {
		h = &traced{next: h, rt: rt, tr: cfg.TracerProvider.Tracer(oteltrace.Scope)}
	}
	return h
}

// router sends the four lock routes that carry nearly all traffic to
// their handlers directly and everything else through the mux, whose
// pattern matching costs more than the rest of such a request's routing.
// The mux routes them the same way (it also serves them when they come
// escaped, e.g. /v1/locks/%74ry).
type router struct {
	s   *server
	mux *routeMux
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The probes say only whether this node serves; load balancers and
	// orchestrators ask without credentials.
	// The dashboard's page is public too: its data comes from routes
	// that check credentials.
	if r.Method == http.MethodGet && (r.URL.Path == wire.PathLivez || r.URL.Path == wire.PathReadyz || r.URL.Path == wire.PathOpenAPI || publicPath(r.URL.Path)) {
		rt.mux.ServeHTTP(w, r)
		return
	}
	fast := r.Method == http.MethodPost && r.URL.RawPath == "" && fastRoute(r.URL.Path)
	if !fast {
		// Before the mux, which would redirect such a path to a cleaned
		// one: another key.
		if err := checkLockPath(r.URL.EscapedPath()); err != nil {
			rt.s.fail(w, r, err)
			return
		}
	}
	if rt.s.cfg.Users != nil {
		pattern := "POST " + r.URL.Path
		if !fast {
			pattern = rt.pattern(r)
		}
		var ok bool
		if r, ok = rt.authenticate(w, r, pattern); !ok {
			return
		}
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !isJSON(r.Header["Content-Type"]) {
		rt.s.fail(w, r, fmt.Errorf("%w: got %q", wire.ErrContentType, r.Header.Get("Content-Type")))
		return
	}
	if r.ContentLength != 0 { // a body follows (-1: chunked)
		setReadDeadline(w, time.Now().Add(rt.s.cfg.BodyTimeout))
	}
	if r.Method == http.MethodPost && r.URL.RawPath == "" {
		switch r.URL.Path {
		case wire.PathTry:
			rt.s.try(w, r)
			return
		case wire.PathRelease:
			rt.s.release(w, r)
			return
		case wire.PathAcquire:
			rt.s.acquire(w, r)
			return
		case wire.PathExtend:
			rt.s.extend(w, r)
			return
		}
	}
	rt.mux.ServeHTTP(w, r)
}

// isJSON reports whether a request's Content-Type header says
// application/json (parameters such as charset allowed). Every request
// that may change something must say so: a web page can make a browser
// send a form or a "simple" cross-origin request with any other type
// (text/plain, form encodings) without asking, but this one only after a
// CORS preflight, which the API never answers, so no page a user opens
// can take, release or force anything.
func isJSON(h []string) bool {
	if len(h) != 1 {
		return false
	}
	if h[0] == wire.ContentTypeJSON { // the common case, without parsing
		return true
	}
	mt, _, err := mime.ParseMediaType(h[0])
	return err == nil && mt == wire.ContentTypeJSON
}

// fastRoute reports whether ServeHTTP sends path (of a POST) straight to
// its handler.
func fastRoute(path string) bool {
	return path == wire.PathTry || path == wire.PathRelease || path == wire.PathAcquire || path == wire.PathExtend
}

// ---- locks ----

func (s *server) acquire(w http.ResponseWriter, r *http.Request) {
	req, ok := s.acquireRequest(w, r)
	if !ok {
		return
	}
	if req.WaitMs == 0 {
		// The remote caller asked to wait "forever": bound it so a client
		// that vanished without closing its connection does not keep a
		// waiter queued indefinitely. The client re-issues after it.
		req.WaitMs = api.MaxWait.Milliseconds()
	}
	// The request is another process's: the node adds no metadata of its own.
	lease, err := s.l.Acquire(api.WithoutDefaultMeta(r.Context()), req)
	s.reply(w, r, &lease, err)
}

func (s *server) try(w http.ResponseWriter, r *http.Request) {
	req, ok := s.acquireRequest(w, r)
	if !ok {
		return
	}
	lease, err := s.l.TryAcquire(api.WithoutDefaultMeta(r.Context()), req)
	if errors.Is(err, api.ErrLocked) {
		err = s.heldBy(r, err, keysOf(req.Key, req.Keys))
	}
	s.reply(w, r, &lease, err)
}

// heldBy adds who holds the first held key to a refusal (ErrLocked), as
// GET /v1/locks/{key} would show it: only to a caller who may read every
// key, and from this node's own state (a refusal is answered anyway; its
// detail need not be linearizable).
func (s *server) heldBy(r *http.Request, err error, keys []string) error {
	if u := userOf(r); u != nil {
		if !u.Can(auth.Read) {
			return err
		}
		for _, k := range keys {
			if !u.Key(k) {
				return err
			}
		}
	}
	for _, k := range keys {
		info, ierr := s.l.Inspect(r.Context(), k, api.ReadOptions{Stale: true})
		if ierr != nil || len(info.Holders) == 0 {
			continue
		}
		return fmt.Errorf("%w (%s)", err, describeHolders(k, keys, info.Holders))
	}
	return err
}

// describeHolders names up to three holders of key with their fences.
func describeHolders(key string, keys []string, hs []api.Holder) string {
	var b strings.Builder
	if len(keys) > 1 {
		fmt.Fprintf(&b, "%q: ", key)
	}
	for i, h := range hs {
		if i == 3 {
			fmt.Fprintf(&b, " and %d more", len(hs)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "holder %q, fence %d", h.Owner, h.Fence)
		if h.Mode != "" && h.Mode != api.ModeExclusive {
			fmt.Fprintf(&b, ", %s", h.Mode)
		}
	}
	return b.String()
}

// acquireRequest decodes and checks the body of acquire and try. On
// failure it has answered.
func (s *server) acquireRequest(w http.ResponseWriter, r *http.Request) (api.AcquireRequest, bool) {
	var req api.AcquireRequest
	if !s.decode(w, r, &req) {
		return req, false
	}
	if err := req.Validate(s.lim); err != nil {
		s.fail(w, r, err)
		return req, false
	}
	if !s.allowKeys(w, r, auth.Write, keysOf(req.Key, req.Keys)...) {
		return req, false
	}
	if err := api.ElectionKeyError(keysOf(req.Key, req.Keys)...); err != nil {
		s.fail(w, r, err)
		return req, false
	}
	return req, true
}

func (s *server) release(w http.ResponseWriter, r *http.Request) {
	var req api.ReleaseRequest
	if !s.decode(w, r, &req) {
		return
	}
	if err := req.Validate(s.lim); err != nil {
		s.fail(w, r, err)
		return
	}
	cat := auth.Write
	if req.Force {
		cat = auth.Admin // anybody's hold
	}
	if !s.allowKeys(w, r, cat, keysOf(req.Key, req.Keys)...) {
		return
	}
	if !req.Force {
		if err := api.ElectionKeyError(keysOf(req.Key, req.Keys)...); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	res, err := s.l.Release(r.Context(), req)
	if req.Force && err == nil {
		s.cfg.Audit.Event(auth.EventForceRelease, userName(r), r.RemoteAddr, "key", req.Key, "keys", req.Keys, "released", res.Released)
	}
	s.reply(w, r, &res, err)
}

func (s *server) extend(w http.ResponseWriter, r *http.Request) {
	var req api.ExtendRequest
	if !s.decode(w, r, &req) {
		return
	}
	if err := req.Validate(s.lim); err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.allowKeys(w, r, auth.Write, keysOf(req.Key, req.Keys)...) {
		return
	}
	if err := api.ElectionKeyError(keysOf(req.Key, req.Keys)...); err != nil {
		s.fail(w, r, err)
		return
	}
	lease, err := s.l.Extend(r.Context(), req)
	s.reply(w, r, &lease, err)
}

func (s *server) inspect(w http.ResponseWriter, r *http.Request, key string) {
	if err := s.lim.CheckKey(key); err != nil {
		s.fail(w, r, err)
		return
	}
	stale, err := boolParam(r, "stale")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	bq, err := parseBlocking(r)
	if err == nil && bq.has && s.changes == nil {
		err = errNoBlocking
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.allowKeys(w, r, auth.Read, key) {
		return
	}
	if bq.has && !s.block(w, r, bq, s.changes.KeyIndex(key), func(ctx context.Context) error {
		_, err := s.changes.WaitKeyChange(ctx, key, bq.index)
		return err
	}) {
		return
	}
	read := func(ctx context.Context) (api.LockInfo, error) {
		var idx uint64
		if s.changes != nil {
			idx = s.changes.KeyIndex(key) // before the read: the state is at least as new
		}
		info, err := s.l.Inspect(ctx, key, api.ReadOptions{Stale: stale})
		if err == nil && info.Index == 0 {
			info.Index = idx
		}
		if errors.Is(err, api.ErrNotFound) {
			if bq.has {
				// A watcher is told the lock is free, with the index of that.
				return api.FreeLock(key, idx), nil
			}
			info.Index = idx // the 404's header
		}
		return info, err
	}
	var info api.LockInfo
	if bq.has {
		info, err = s.reads.do(r.Context(), readKey{key: key, stale: stale}, read)
	} else {
		info, err = read(r.Context())
	}
	if err == nil || errors.Is(err, api.ErrNotFound) {
		s.setIndex(w, info.Index)
	}
	s.reply(w, r, info, err)
}

func (s *server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := api.ListRequest{Prefix: q.Get("prefix"), After: q.Get("after")}
	var err error
	if v := q.Get("limit"); v != "" {
		if req.Limit, err = strconv.Atoi(v); err != nil {
			err = fmt.Errorf("%w: limit %q is not a number", api.ErrBadRequest, v)
		} else {
			err = req.Validate(s.lim)
		}
	}
	if err == nil {
		req.Stale, err = boolParam(r, "stale")
	}
	var bq blockingQuery
	if err == nil {
		bq, err = parseBlocking(r)
	}
	if err == nil && bq.has && s.changes == nil {
		err = errNoBlocking
	}
	if err == nil && bq.has && len(req.Prefix) > s.lim.MaxKeyBytes {
		// It matches no key; a watcher would only hold its bytes.
		err = fmt.Errorf("%w: a blocking query's prefix of %d bytes is longer than a key (%d)", api.ErrLimit, len(req.Prefix), s.lim.MaxKeyBytes)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if bq.has && !s.block(w, r, bq, s.changes.PrefixIndex(req.Prefix), func(ctx context.Context) error {
		_, err := s.changes.WaitPrefixChange(ctx, req.Prefix, bq.index)
		return err
	}) {
		return
	}
	var idx uint64
	if s.changes != nil {
		idx = s.changes.PrefixIndex(req.Prefix) // before the read, as inspect
	}
	res, err := s.l.List(r.Context(), req)
	if res.Index == 0 {
		res.Index = idx
	}
	s.setIndex(w, res.Index)
	// A user sees only its namespace; a page may come back short, Next
	// still continues after the last lock read.
	res.Locks = visible(r, res.Locks)
	if err == nil && res.Locks == nil {
		res.Locks = []api.LockInfo{} // "locks": [] rather than null
	}
	s.reply(w, r, res, err)
}

// ---- sessions ----

func (s *server) openSession(w http.ResponseWriter, r *http.Request) {
	var req wire.SessionRequest
	if !s.decode(w, r, &req) {
		return
	}
	if err := req.Validate(s.lim); err != nil {
		s.fail(w, r, err)
		return
	}
	info, err := s.l.OpenSession(r.Context(), time.Duration(req.TTLMs)*time.Millisecond)
	s.reply(w, r, info, err)
}

func (s *server) keepAlive(w http.ResponseWriter, r *http.Request) {
	info, err := s.l.KeepAlive(r.Context(), r.PathValue("id"))
	s.reply(w, r, info, err)
}

func (s *server) closeSession(w http.ResponseWriter, r *http.Request) {
	s.replyEmpty(w, r, s.l.CloseSession(r.Context(), r.PathValue("id")))
}

// ---- elections ----

func (s *server) campaign(w http.ResponseWriter, r *http.Request) {
	var req wire.CampaignRequest
	if !s.decode(w, r, &req) {
		return
	}
	creq := api.CampaignRequest{Election: r.PathValue("name"), Value: req.Value, Session: req.Session, Token: req.Token}
	if err := creq.Validate(s.lim); err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.allowKeys(w, r, auth.Write, api.ElectionPrefix+r.PathValue("name")) {
		return
	}
	leader, err := s.l.Campaign(r.Context(), creq)
	s.reply(w, r, leader, err)
}

func (s *server) resign(w http.ResponseWriter, r *http.Request) {
	var req wire.ResignRequest
	if !s.decode(w, r, &req) {
		return
	}
	rreq := api.ResignRequest{Election: r.PathValue("name"), Value: req.Value, Token: req.Token}
	if err := rreq.Validate(s.lim); err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.allowKeys(w, r, auth.Write, api.ElectionPrefix+r.PathValue("name")) {
		return
	}
	s.replyEmpty(w, r, s.l.Resign(r.Context(), api.Leader{Election: rreq.Election, Value: req.Value, Token: req.Token}))
}

func (s *server) proclaim(w http.ResponseWriter, r *http.Request) {
	var req wire.ProclaimRequest
	if !s.decode(w, r, &req) {
		return
	}
	preq := api.ProclaimRequest{Election: r.PathValue("name"), Value: req.Value, Token: req.Token, NewValue: req.NewValue}
	if err := preq.Validate(s.lim); err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.allowKeys(w, r, auth.Write, api.ElectionPrefix+r.PathValue("name")) {
		return
	}
	leader, err := s.l.Proclaim(r.Context(), api.Leader{Election: preq.Election, Value: req.Value, Token: req.Token}, req.NewValue)
	s.reply(w, r, leader, err)
}

// observe streams one JSON api.Leader per line, flushed after each, until
// the client goes away or the Locker closes the channel.
func (s *server) observe(w http.ResponseWriter, r *http.Request) {
	if !s.allowKeys(w, r, auth.Read, api.ElectionPrefix+r.PathValue("name")) {
		return
	}
	ch, err := s.l.Observe(r.Context(), r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", wire.ContentTypeNDJSON)
	w.WriteHeader(http.StatusOK)
	// Flush the header now: the client learns the stream is open before
	// the first change.
	_ = rc.Flush()
	enc := json.NewEncoder(w)
	for leader := range ch {
		if err := enc.Encode(leader.Public()); err != nil {
			// The client is gone; r.Context() is cancelled, so the
			// Locker closes ch. Drain it so its sender never blocks.
			for range ch {
			}
			return
		}
		_ = rc.Flush()
	}
}

// ---- membership ----

// Membership is the optional cluster-membership side of a node. When the
// Locker given to New implements it (cluster.Node does), New also serves
// POST /v1/members and DELETE /v1/members/{id}.
type Membership interface {
	// AddVoter adds server id at its raft address addr as a voter.
	AddVoter(ctx context.Context, id, addr string) error
	// RemoveServer removes server id from the cluster.
	RemoveServer(ctx context.Context, id string) error
}

// ForcedMembership is the optional side of a Membership that adds a
// voter without checking that it answers (wire.MemberRequest.Force);
// cluster.Node implements it.
type ForcedMembership interface {
	AddVoterForce(ctx context.Context, id, addr string) error
}

func (s *server) addMember(w http.ResponseWriter, r *http.Request, m Membership) {
	var req wire.MemberRequest
	if !s.decode(w, r, &req) {
		return
	}
	if req.ID == "" || req.Address == "" {
		s.fail(w, r, fmt.Errorf("%w: id and address are required", api.ErrBadRequest))
		return
	}
	var err error
	if req.Force {
		fm, ok := m.(ForcedMembership)
		if !ok {
			s.fail(w, r, fmt.Errorf("%w: this node cannot add a voter without checking it", api.ErrBadRequest))
			return
		}
		err = fm.AddVoterForce(r.Context(), req.ID, req.Address)
	} else {
		err = m.AddVoter(r.Context(), req.ID, req.Address)
	}
	s.cfg.Audit.Event(auth.EventMemberAdd, userName(r), r.RemoteAddr, "member", req.ID, "address", req.Address, "force", req.Force, "error", errText(err))
	s.replyEmpty(w, r, err)
}

func (s *server) removeMember(w http.ResponseWriter, r *http.Request, m Membership) {
	id := r.PathValue("id")
	err := m.RemoveServer(r.Context(), id)
	s.cfg.Audit.Event(auth.EventMemberRemove, userName(r), r.RemoteAddr, "member", id, "error", errText(err))
	s.replyEmpty(w, r, err)
}

// errText is err's text, or "" for nil (an audit field).
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// ---- misc ----

func (s *server) fenceCheck(w http.ResponseWriter, r *http.Request) {
	var req wire.FenceCheckRequest
	if !s.decode(w, r, &req) {
		return
	}
	if err := req.Validate(s.lim); err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.allowKeys(w, r, auth.Write, req.Resource) {
		return
	}
	res, err := s.l.FenceCheck(r.Context(), req.Resource, req.Token)
	s.reply(w, r, res, err)
}

// livez answers while the process serves HTTP: a liveness probe restarts
// a node only when it cannot even do that.
func (s *server) livez(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok\n")
}

// readyz answers 200 when the node can serve requests now, 503 with the
// reason otherwise (Config.Ready decides; cluster.Node.Ready lists a
// node's conditions).
func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	ready := s.cfg.Ready
	if ready == nil {
		ready = func(ctx context.Context) error {
			st, err := s.l.Status(ctx)
			if err == nil && st.Leader == "" {
				err = errors.New("no leader known")
			}
			return err
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := ready(r.Context()); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "not ready: "+api.ClientText(err)+"\n")
		return
	}
	_, _ = io.WriteString(w, "ok\n")
}

func (s *server) status(w http.ResponseWriter, r *http.Request) {
	st, err := s.l.Status(r.Context())
	if err == nil && s.cfg.Extra != nil {
		s.cfg.Extra(&st)
	}
	if err == nil {
		s.addMemberAddrs(r.Context(), &st)
	}
	s.reply(w, r, st, err)
}

// ---- parameters ----

func boolParam(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%w: %s=%q is not a boolean", api.ErrBadRequest, name, v)
	}
	return b, nil
}

// ---- encoding ----

// decode reads exactly one JSON document into v, refusing unknown fields,
// trailing data and bodies over MaxBodyBytes. On failure it has answered.
func (s *server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	buf := bodyPool.Get().(*[]byte)
	defer bodyPool.Put(buf)
	b, err := s.readBody(w, r, (*buf)[:0])
	if cap(b) <= maxPooledBody {
		*buf = b[:0]
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			s.fail(w, r, fmt.Errorf("%w: over %d bytes", wire.ErrBodyTooLarge, tooBig.Limit))
		case errors.Is(err, os.ErrDeadlineExceeded):
			s.fail(w, r, fmt.Errorf("%w: %v", wire.ErrBodyTimeout, s.cfg.BodyTimeout))
		default:
			s.fail(w, r, fmt.Errorf("%w: reading body: %v", api.ErrBadRequest, err))
		}
		return false
	}
	// The whole body is in: what follows (a blocking acquire's wait) must
	// not be cut by the body deadline, and net/http's check for a client
	// that hangs up reads the connection under it.
	setReadDeadline(w, time.Time{})
	// The fast path copies every string it keeps, so b can go back to
	// the pool; so does encoding/json.
	if wire.DecodeJSON(b, v) {
		return true
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		s.fail(w, r, fmt.Errorf("%w: %s", api.ErrBadRequest, jsonErrorText(err)))
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		s.fail(w, r, fmt.Errorf("%w: trailing data after the JSON body", api.ErrBadRequest))
		return false
	}
	return true
}

// bodyPool holds request body buffers (*[]byte); one that grew past
// maxPooledBody is dropped instead, so a rare large body does not pin
// memory.
var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

const maxPooledBody = 16 << 10

// readBody appends the request body to b; one over MaxBodyBytes is a
// *http.MaxBytesError. b grows with the bytes that arrive, at most
// doubling, never by the declared Content-Length alone: a client that
// declares a large body and sends little costs little. A declared length
// is read up to that length, so the common small body takes one read.
func (s *server) readBody(w http.ResponseWriter, r *http.Request, b []byte) ([]byte, error) {
	limit := s.cfg.MaxBodyBytes
	if n := r.ContentLength; n >= 0 {
		if n > limit {
			return b, &http.MaxBytesError{Limit: limit}
		}
		want := len(b) + int(n)
		for len(b) < want {
			if len(b) == cap(b) {
				b = slices.Grow(b, min(want-len(b), max(512, len(b))))
			}
			m, err := r.Body.Read(b[len(b):min(cap(b), want)])
			b = b[:len(b)+m]
			if err == io.EOF && len(b) < want {
				return b, io.ErrUnexpectedEOF
			}
			if err != nil && err != io.EOF {
				return b, err
			}
		}
		return b, nil
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, max(512, len(b)))
		}
		n, err := body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

func (s *server) reply(w http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *server) replyEmpty(w http.ResponseWriter, r *http.Request, err error) {
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, code := wire.StatusOf(err)
	lg := oteltrace.Logger(r.Context(), s.cfg.Logger)
	log := lg.Debug
	if status >= 500 {
		log = lg.Warn
	}
	if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
		log = lg.Trace // the client left; nobody reads this
	}
	log("request failed", "method", r.Method, "path", r.URL.Path, "status", status, "error", err)
	writeJSON(w, status, &api.ErrorBody{Code: code, Message: api.ClientText(err)})
}

// jsonContentType is the Content-Type header value of every JSON answer,
// shared: net/http copies handler headers before writing them and never
// changes a value slice.
var jsonContentType = []string{wire.ContentTypeJSON}

func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := replyPool.Get().(*[]byte)
	defer replyPool.Put(buf)
	b, ok := wire.AppendJSON((*buf)[:0], v)
	if !ok {
		var err error
		b, err = json.Marshal(v)
		if err != nil {
			status = http.StatusInternalServerError
			b, _ = json.Marshal(api.ErrorBody{Code: api.CodeInternal, Message: "encoding reply: " + err.Error()})
		}
	}
	b = append(b, '\n')
	if cap(b) <= maxPooledBody && ok {
		*buf = b[:0]
	}
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(status)
	// Write copies b into the response's buffer (or to the connection)
	// before it returns, so b can go back to the pool.
	_, _ = w.Write(b)
}

// replyPool holds reply encoding buffers (*[]byte).
var replyPool = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}
