package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/auth"
)

// DefaultMaxBodyBytes is Config.MaxBodyBytes when it is zero.
const DefaultMaxBodyBytes = 1 << 20

// maxListLimit mirrors api.ListRequest's documented maximum.
const maxListLimit = 10000

// Config configures the handler. The zero value is usable.
type Config struct {
	// Logger receives one line per failed request (Warn for 5xx, Debug
	// otherwise). Default: a null logger.
	Logger hclog.Logger
	// MaxBodyBytes bounds a request body; a larger one is refused with
	// 400 "limit" before it is decoded. Default DefaultMaxBodyBytes (1 MiB).
	MaxBodyBytes int64
	// Metrics, when set, is served at GET /metrics (a Prometheus handler).
	Metrics http.Handler
	// Extra, when set, fills node-level fields of GET /v1/status that the
	// Locker does not know (HTTP and RESP addresses, mirror state). It is
	// called after Locker.Status succeeded and must not block.
	Extra func(*api.Status)
	// Users, when set, turns on authentication (HTTP Basic) and
	// permissions (auth.go). Nil: every request is allowed.
	Users *auth.Store
	// Audit receives forced releases and membership changes and counts
	// refused requests. Nil: not audited.
	Audit *auth.Audit
}

// Validate reports a configuration error.
func (c Config) Validate() error {
	if c.MaxBodyBytes < 0 {
		return fmt.Errorf("httpapi: MaxBodyBytes %d is negative", c.MaxBodyBytes)
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
	return c
}

type server struct {
	l   api.Locker
	cfg Config
}

// New returns the HTTP handler of the lock API served by l. It panics only
// if cfg is invalid (a programming error); call cfg.Validate first to get
// an error instead.
func New(l api.Locker, cfg Config) http.Handler {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	s := &server{l: l, cfg: cfg.withDefaults()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathAcquire, s.acquire)
	mux.HandleFunc("POST "+PathTry, s.try)
	mux.HandleFunc("POST "+PathRelease, s.release)
	mux.HandleFunc("POST "+PathExtend, s.extend)
	mux.HandleFunc("GET "+PathLocks, s.list)
	mux.HandleFunc("GET "+PathLockPrefix+"{key...}", s.inspect)
	mux.HandleFunc("POST "+PathSessions, s.openSession)
	mux.HandleFunc("PUT "+PathSessions+"/{id}/keepalive", s.keepAlive)
	mux.HandleFunc("POST "+PathSessions+"/{id}/keepalive", s.keepAlive)
	mux.HandleFunc("DELETE "+PathSessions+"/{id}", s.closeSession)
	mux.HandleFunc("POST "+PathElections+"{name}/campaign", s.campaign)
	mux.HandleFunc("POST "+PathElections+"{name}/resign", s.resign)
	mux.HandleFunc("GET "+PathElections+"{name}/observe", s.observe)
	mux.HandleFunc("POST "+PathFenceCheck, s.fenceCheck)
	mux.HandleFunc("GET "+PathStatus, s.status)
	if m, ok := l.(Membership); ok {
		mux.HandleFunc("POST "+PathMembers, func(w http.ResponseWriter, r *http.Request) { s.addMember(w, r, m) })
		mux.HandleFunc("DELETE "+PathMembers+"/{id}", func(w http.ResponseWriter, r *http.Request) { s.removeMember(w, r, m) })
	}
	if cfg.Metrics != nil {
		mux.Handle("GET "+PathMetrics, cfg.Metrics)
	}
	// Everything else answers a JSON 404, so clients only ever parse one
	// error shape.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, fmt.Errorf("%w: no route %s %s", api.ErrNotFound, r.Method, r.URL.Path))
	})
	return &router{s: s, mux: mux}
}

// router sends the four lock routes that carry nearly all traffic to
// their handlers directly and everything else through the mux, whose
// pattern matching costs more than the rest of such a request's routing.
// The mux routes them the same way (it also serves them when they come
// escaped, e.g. /v1/locks/%74ry).
type router struct {
	s   *server
	mux *http.ServeMux
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rt.s.cfg.Users != nil {
		pattern := "POST " + r.URL.Path
		if r.Method != http.MethodPost || r.URL.RawPath != "" || !fastRoute(r.URL.Path) {
			_, pattern = rt.mux.Handler(r)
		}
		var ok bool
		if r, ok = rt.authenticate(w, r, pattern); !ok {
			return
		}
	}
	if r.Method == http.MethodPost && r.URL.RawPath == "" {
		switch r.URL.Path {
		case PathTry:
			rt.s.try(w, r)
			return
		case PathRelease:
			rt.s.release(w, r)
			return
		case PathAcquire:
			rt.s.acquire(w, r)
			return
		case PathExtend:
			rt.s.extend(w, r)
			return
		}
	}
	rt.mux.ServeHTTP(w, r)
}

// fastRoute reports whether ServeHTTP sends path (of a POST) straight to
// its handler.
func fastRoute(path string) bool {
	return path == PathTry || path == PathRelease || path == PathAcquire || path == PathExtend
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
	lease, err := s.l.Acquire(r.Context(), req)
	s.reply(w, r, &lease, err)
}

func (s *server) try(w http.ResponseWriter, r *http.Request) {
	req, ok := s.acquireRequest(w, r)
	if !ok {
		return
	}
	lease, err := s.l.TryAcquire(r.Context(), req)
	s.reply(w, r, &lease, err)
}

// acquireRequest decodes and checks the body of acquire and try. On
// failure it has answered.
func (s *server) acquireRequest(w http.ResponseWriter, r *http.Request) (api.AcquireRequest, bool) {
	var req api.AcquireRequest
	if !s.decode(w, r, &req) {
		return req, false
	}
	if err := validateAcquire(req); err != nil {
		s.fail(w, r, err)
		return req, false
	}
	return req, s.allowKeys(w, r, auth.Write, keysOf(req.Key, req.Keys)...)
}

func (s *server) release(w http.ResponseWriter, r *http.Request) {
	var req api.ReleaseRequest
	if !s.decode(w, r, &req) {
		return
	}
	if err := validateKeys(req.Key, req.Keys); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Owner == "" && !req.Force {
		s.fail(w, r, fmt.Errorf("%w: owner is required (or force)", api.ErrBadRequest))
		return
	}
	cat := auth.Write
	if req.Force {
		cat = auth.Admin // anybody's hold
	}
	if !s.allowKeys(w, r, cat, keysOf(req.Key, req.Keys)...) {
		return
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
	err := validateKeys(req.Key, req.Keys)
	switch {
	case err != nil:
	case req.Owner == "":
		err = fmt.Errorf("%w: owner is required", api.ErrBadRequest)
	case req.TTLMs <= 0:
		err = fmt.Errorf("%w: ttl_ms must be positive, got %d", api.ErrBadRequest, req.TTLMs)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.allowKeys(w, r, auth.Write, keysOf(req.Key, req.Keys)...) {
		return
	}
	lease, err := s.l.Extend(r.Context(), req)
	s.reply(w, r, &lease, err)
}

func (s *server) inspect(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	if key == "" {
		s.fail(w, r, fmt.Errorf("%w: key is required", api.ErrBadRequest))
		return
	}
	stale, err := boolParam(r, "stale")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.allowKeys(w, r, auth.Read, key) {
		return
	}
	info, err := s.l.Inspect(r.Context(), key, api.ReadOptions{Stale: stale})
	s.reply(w, r, info, err)
}

func (s *server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := api.ListRequest{Prefix: q.Get("prefix"), After: q.Get("after")}
	var err error
	if v := q.Get("limit"); v != "" {
		req.Limit, err = strconv.Atoi(v)
		switch {
		case err != nil:
			err = fmt.Errorf("%w: limit %q is not a number", api.ErrBadRequest, v)
		case req.Limit < 0:
			err = fmt.Errorf("%w: limit %d is negative", api.ErrBadRequest, req.Limit)
		case req.Limit > maxListLimit:
			err = fmt.Errorf("%w: limit %d is over %d", api.ErrLimit, req.Limit, maxListLimit)
		}
	}
	if err == nil {
		req.Stale, err = boolParam(r, "stale")
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.l.List(r.Context(), req)
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
	var req SessionRequest
	if !s.decode(w, r, &req) {
		return
	}
	if req.TTLMs <= 0 {
		s.fail(w, r, fmt.Errorf("%w: ttl_ms must be positive, got %d", api.ErrBadRequest, req.TTLMs))
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
	var req CampaignRequest
	if !s.decode(w, r, &req) {
		return
	}
	if req.Value == "" || req.Session == "" {
		s.fail(w, r, fmt.Errorf("%w: value and session are required", api.ErrBadRequest))
		return
	}
	if !s.allowKeys(w, r, auth.Write, r.PathValue("name")) {
		return
	}
	leader, err := s.l.Campaign(r.Context(), r.PathValue("name"), req.Value, req.Session)
	s.reply(w, r, leader, err)
}

func (s *server) resign(w http.ResponseWriter, r *http.Request) {
	var req ResignRequest
	if !s.decode(w, r, &req) {
		return
	}
	if req.Value == "" {
		s.fail(w, r, fmt.Errorf("%w: value is required", api.ErrBadRequest))
		return
	}
	if !s.allowKeys(w, r, auth.Write, r.PathValue("name")) {
		return
	}
	s.replyEmpty(w, r, s.l.Resign(r.Context(), r.PathValue("name"), req.Value))
}

// observe streams one JSON api.Leader per line, flushed after each, until
// the client goes away or the Locker closes the channel.
func (s *server) observe(w http.ResponseWriter, r *http.Request) {
	if !s.allowKeys(w, r, auth.Read, r.PathValue("name")) {
		return
	}
	ch, err := s.l.Observe(r.Context(), r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", ContentTypeNDJSON)
	w.WriteHeader(http.StatusOK)
	// Flush the header now: the client learns the stream is open before
	// the first change.
	_ = rc.Flush()
	enc := json.NewEncoder(w)
	for leader := range ch {
		if err := enc.Encode(leader); err != nil {
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

func (s *server) addMember(w http.ResponseWriter, r *http.Request, m Membership) {
	var req MemberRequest
	if !s.decode(w, r, &req) {
		return
	}
	if req.ID == "" || req.Address == "" {
		s.fail(w, r, fmt.Errorf("%w: id and address are required", api.ErrBadRequest))
		return
	}
	err := m.AddVoter(r.Context(), req.ID, req.Address)
	s.cfg.Audit.Event(auth.EventMemberAdd, userName(r), r.RemoteAddr, "member", req.ID, "address", req.Address, "error", errText(err))
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
	var req FenceCheckRequest
	if !s.decode(w, r, &req) {
		return
	}
	if req.Resource == "" {
		s.fail(w, r, fmt.Errorf("%w: resource is required", api.ErrBadRequest))
		return
	}
	if !s.allowKeys(w, r, auth.Write, req.Resource) {
		return
	}
	res, err := s.l.FenceCheck(r.Context(), req.Resource, req.Token)
	s.reply(w, r, res, err)
}

func (s *server) status(w http.ResponseWriter, r *http.Request) {
	st, err := s.l.Status(r.Context())
	if err == nil && s.cfg.Extra != nil {
		s.cfg.Extra(&st)
	}
	s.reply(w, r, st, err)
}

// ---- validation ----

func validateKeys(key string, keys []string) error {
	switch {
	case key == "" && len(keys) == 0:
		return fmt.Errorf("%w: key or keys is required", api.ErrBadRequest)
	case key != "" && len(keys) > 0:
		return fmt.Errorf("%w: give key or keys, not both", api.ErrBadRequest)
	}
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if k == "" {
			return fmt.Errorf("%w: empty key in keys", api.ErrBadRequest)
		}
		if seen[k] {
			return fmt.Errorf("%w: key %q twice in keys", api.ErrBadRequest, k)
		}
		seen[k] = true
	}
	return nil
}

func validateAcquire(req api.AcquireRequest) error {
	if err := validateKeys(req.Key, req.Keys); err != nil {
		return err
	}
	switch {
	case req.Owner == "":
		return fmt.Errorf("%w: owner is required", api.ErrBadRequest)
	case req.TTLMs <= 0:
		return fmt.Errorf("%w: ttl_ms must be positive, got %d", api.ErrBadRequest, req.TTLMs)
	case req.WaitMs < 0:
		return fmt.Errorf("%w: wait_ms is negative", api.ErrBadRequest)
	case req.LockDelay < 0 || req.MaxHoldMs < 0:
		return fmt.Errorf("%w: lock_delay_ms and max_hold_ms must not be negative", api.ErrBadRequest)
	case req.Permits < 0:
		return fmt.Errorf("%w: permits is negative", api.ErrBadRequest)
	}
	switch req.Mode {
	case "", api.ModeExclusive, api.ModeShared:
	case api.ModeSemaphore:
		if req.Permits <= 0 {
			return fmt.Errorf("%w: a semaphore needs permits > 0", api.ErrBadRequest)
		}
	default:
		return fmt.Errorf("%w: unknown mode %q", api.ErrBadRequest, req.Mode)
	}
	return nil
}

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
		if errors.As(err, &tooBig) {
			s.fail(w, r, fmt.Errorf("%w: body over %d bytes", api.ErrLimit, tooBig.Limit))
		} else {
			s.fail(w, r, fmt.Errorf("%w: reading body: %v", api.ErrBadRequest, err))
		}
		return false
	}
	// The fast path copies every string it keeps, so b can go back to
	// the pool; so does encoding/json.
	if DecodeJSON(b, v) {
		return true
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		s.fail(w, r, fmt.Errorf("%w: invalid JSON body: %v", api.ErrBadRequest, err))
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

// readBody appends the request body to b. A body whose length is declared
// is read in one piece (no growing buffer); one over MaxBodyBytes is a
// *http.MaxBytesError either way.
func (s *server) readBody(w http.ResponseWriter, r *http.Request, b []byte) ([]byte, error) {
	max := s.cfg.MaxBodyBytes
	if n := r.ContentLength; n >= 0 {
		if n > max {
			return b, &http.MaxBytesError{Limit: max}
		}
		b = slices.Grow(b, int(n))[:n]
		_, err := io.ReadFull(r.Body, b)
		return b, err
	}
	body := http.MaxBytesReader(w, r.Body, max)
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, 512)
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
	status, code := StatusOf(err)
	log := s.cfg.Logger.Debug
	if status >= 500 {
		log = s.cfg.Logger.Warn
	}
	if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
		log = s.cfg.Logger.Trace // the client left; nobody reads this
	}
	log("request failed", "method", r.Method, "path", r.URL.Path, "status", status, "error", err)
	writeJSON(w, status, &api.ErrorBody{Code: code, Message: err.Error()})
}

// jsonContentType is the Content-Type header value of every JSON answer,
// shared: net/http copies handler headers before writing them and never
// changes a value slice.
var jsonContentType = []string{ContentTypeJSON}

func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := replyPool.Get().(*[]byte)
	defer replyPool.Put(buf)
	b, ok := AppendJSON((*buf)[:0], v)
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
