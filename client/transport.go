package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/internal/oteltrace"
	"github.com/locknode/locknode/wire"
)

// Error is a non-2xx answer from a node. It unwraps to the api sentinel
// of its code, so errors.Is(err, api.ErrLocked) works.
type Error struct {
	Status  int    // HTTP status
	Code    string // api.Code*; empty if the body was not an api.ErrorBody
	Message string
}

func (e *Error) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("locknode: HTTP %d %s", e.Status, e.Code)
}

// Unwrap returns the api sentinel for the code (nil if unknown).
func (e *Error) Unwrap() error {
	if err := wire.ErrorOf(e.Code); err != nil {
		return err
	}
	if wire.Retryable(e.Status) {
		return api.ErrNoLeader // a gateway in front of the node failed
	}
	return nil
}

// newID returns 128 random bits in hex: owner tokens and request ids.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand doc)
	return hex.EncodeToString(b[:])
}

// call is one logical operation: body is rebuilt for every attempt (so a
// long poll can send its remaining wait), and every attempt carries the
// same request id inside it.
type call struct {
	op     string // for logs
	method string
	path   string
	body   func() any    // nil: no body
	wait   time.Duration // > 0: a long poll; the attempt may last this long plus RequestTimeout
	out    any           // decoded from a 2xx JSON answer; nil: ignored
	index  *uint64       // set from the answer's wire.HeaderIndex, any status; nil: ignored
}

// do runs a call with fail-over and retries. It returns the send time of
// the FIRST attempt: a retry may be answered from the first attempt's
// result (exactly-once), so that is the earliest the server can have
// applied it — the conservative start of a lease.
func (c *caller) do(ctx context.Context, cl call) (sent time.Time, err error) {
	n := len(c.cfg.Endpoints)
	start := int(c.cur.Load())
	var lastErr error
	cfgFails := 0 // endpoints in a row that failed on the client's setup
	// lastAnswer is the last node that answered but could not serve (no
	// leader): it says more than another endpoint's dial failure.
	var lastAnswer *Error
	for attempt := 0; attempt < c.cfg.Retry.MaxAttempts; attempt++ {
		if attempt > 0 && attempt%n == 0 {
			t := time.NewTimer(c.cfg.Retry.backoff(attempt / n))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return sent, c.ctxErr(ctx, cl, lastErr)
			}
		}
		idx := (start + attempt) % n
		now := time.Now()
		if attempt == 0 {
			sent = now
		}
		var (
			status int
			e      *Error
			decErr error
		)
		actx, asp := attemptSpan(ctx, cl, c.cfg.Endpoints[idx], attempt+1)
		err := c.attempt(actx, c.eps[idx], cl, func(st int, body []byte) {
			status = st
			if st >= 200 && st < 300 {
				if cl.out != nil && st != http.StatusNoContent && !wire.DecodeJSON(body, cl.out) {
					decErr = json.Unmarshal(body, cl.out)
				}
				return
			}
			e = &Error{Status: st}
			var eb api.ErrorBody
			if json.Unmarshal(body, &eb) == nil {
				e.Code, e.Message = eb.Code, eb.Message
			} else {
				e.Message = fmt.Sprintf("locknode: HTTP %d: %.200s", st, body)
			}
		})
		asp.endAttempt(status, err)
		if err != nil {
			if ctx.Err() != nil {
				return sent, c.ctxErr(ctx, cl, err)
			}
			err = classify(ctx, probeDial(c.cfg.HTTPClient), c.cfg.Endpoints[idx], err)
			lastErr = err
			c.log.Debug("request failed, trying the next endpoint", "op", cl.op, "endpoint", c.cfg.Endpoints[idx], "attempt", attempt+1, "error", err)
			// Every endpoint refused the client's own setup (trust, name,
			// scheme): the next round would fail alike.
			var ce *ConnError
			if errors.As(err, &ce) && ce.Config() {
				if cfgFails++; cfgFails >= n {
					return sent, &unreachable{op: cl.op, attempts: attempt + 1, last: err}
				}
			} else {
				cfgFails = 0
			}
			continue
		}
		cfgFails = 0
		if e == nil {
			c.cur.Store(int32(idx))
			if decErr != nil {
				return sent, fmt.Errorf("client: %s: decoding answer: %w", cl.op, decErr)
			}
			return sent, nil
		}
		if wire.Retryable(status) {
			lastErr, lastAnswer = e, e
			c.log.Debug("node cannot serve, trying the next endpoint", "op", cl.op, "endpoint", c.cfg.Endpoints[idx], "status", status, "error", e)
			continue
		}
		c.cur.Store(int32(idx))
		return sent, e
	}
	var ae *Error
	if errors.As(lastErr, &ae) {
		return sent, ae
	}
	if lastAnswer != nil {
		return sent, lastAnswer
	}
	return sent, &unreachable{op: cl.op, attempts: c.cfg.Retry.MaxAttempts, last: lastErr}
}

// ctxErr is the error of a call abandoned because ctx ended.
func (c *caller) ctxErr(ctx context.Context, cl call, last error) error {
	var answered *Error
	if errors.As(last, &answered) {
		// A node's own answer (no leader) says why the call could not
		// finish: keep it visible to errors.As.
		return fmt.Errorf("%w: %s: %w (last failure: %w)", api.ErrCancelled, cl.op, ctx.Err(), answered)
	}
	if last != nil && !errors.Is(last, ctx.Err()) {
		return fmt.Errorf("%w: %s: %w (last failure: %v)", api.ErrCancelled, cl.op, ctx.Err(), last)
	}
	return fmt.Errorf("%w: %s: %w", api.ErrCancelled, cl.op, ctx.Err())
}

// attempt sends one request to one endpoint and hands the answer to
// answer. A transport failure or an attempt timeout is err; any HTTP
// answer is (status, body). body is only valid during answer (it is
// pooled).
func (c *caller) attempt(ctx context.Context, ep endpoint, cl call, answer func(status int, body []byte)) error {
	actx, cancel := context.WithTimeout(ctx, cl.wait+c.cfg.RequestTimeout)
	defer cancel()
	var rd io.Reader
	if cl.body != nil {
		v := cl.body()
		// Not pooled: the transport may still read a request body after
		// it returned the answer.
		b, ok := wire.AppendJSON(make([]byte, 0, 256), v)
		if !ok {
			var err error
			if b, err = json.Marshal(v); err != nil {
				return err
			}
		}
		rd = bytes.NewReader(b)
	}
	req, err := ep.request(actx, cl.method, cl.path, rd)
	if err != nil {
		return err
	}
	if rd != nil || cl.method != http.MethodGet {
		// The server refuses a write without it (wire.ErrContentType),
		// a bodiless one (keepalive, DELETE) included.
		req.Header["Content-Type"] = jsonContentType
	}
	if c.authz != nil {
		req.Header["Authorization"] = c.authz
	}
	oteltrace.Inject(ctx, req.Header)
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	buf := answerPool.Get().(*[]byte)
	defer answerPool.Put(buf)
	body, err := readAnswer(resp, (*buf)[:0])
	if cap(body) <= maxPooledAnswer {
		*buf = body[:0]
	}
	if err != nil {
		return err
	}
	if cl.index != nil {
		*cl.index, _ = strconv.ParseUint(resp.Header.Get(wire.HeaderIndex), 10, 64)
	}
	if resp.StatusCode == http.StatusBadRequest && bytes.Contains(body, plainToTLS) {
		return &ConnError{Endpoint: ep.raw, Cause: ConnNeedsHTTPS, Err: errors.New(string(bytes.TrimSpace(body)))}
	}
	answer(resp.StatusCode, body)
	return nil
}

// plainToTLS is net/http's answer to plain HTTP on a TLS port.
var plainToTLS = []byte("Client sent an HTTP request to an HTTPS server")

// endpoint is one node base URL, parsed once.
type endpoint struct {
	raw string   // as configured, without trailing slashes
	url *url.URL // nil: build every request URL from raw (see parseEndpoint)
}

// parseEndpoint keeps the parsed URL of a plain endpoint (no user info,
// query, fragment or escaped path, a host without an empty port), whose
// request URLs are then built without parsing.
func parseEndpoint(raw string) endpoint {
	u, err := url.Parse(raw)
	if err != nil || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.RawPath != "" ||
		u.Opaque != "" || strings.HasSuffix(u.Host, ":") || strings.ContainsAny(u.Path, "%?#") {
		return endpoint{raw: raw}
	}
	return endpoint{raw: raw, url: u}
}

// request builds the request for path (a route path; with a query or an
// escaped key it is parsed, as url.Parse would). The result is what
// http.NewRequestWithContext(ctx, method, raw+path, body) returns.
func (ep endpoint) request(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	if ep.url == nil || strings.ContainsAny(path, "%?#") {
		return http.NewRequestWithContext(ctx, method, ep.raw+path, body)
	}
	// An empty URL parses at no cost; the real one is a copy of the
	// endpoint's with the path appended.
	req, err := http.NewRequestWithContext(ctx, method, "", body)
	if err != nil {
		return nil, err
	}
	u := *ep.url
	u.Path += path
	req.URL = &u
	req.Host = u.Host
	return req, nil
}

// jsonContentType is the Content-Type of every request but GETs. Shared:
// the transport only reads a request's header.
var jsonContentType = []string{wire.ContentTypeJSON}

// maxAnswer bounds the body of an answer that is read.
const maxAnswer = 16 << 20

// answerPool holds answer buffers (*[]byte); one that grew past
// maxPooledAnswer (a large list) is dropped instead.
var answerPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

const maxPooledAnswer = 64 << 10

// readAnswer appends resp's body (at most maxAnswer bytes) to b, in one
// read into a buffer of the right size when the length is declared.
func readAnswer(resp *http.Response, b []byte) ([]byte, error) {
	if n := resp.ContentLength; n >= 0 && n <= maxAnswer {
		b = slices.Grow(b, int(n))[:n]
		_, err := io.ReadFull(resp.Body, b)
		return b, err
	}
	r := io.LimitReader(resp.Body, maxAnswer)
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, 512)
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// openStream opens a streaming GET with fail-over; the caller closes the
// body. The request lives as long as ctx.
func (c *caller) openStream(ctx context.Context, path string) (*http.Response, error) {
	n := len(c.cfg.Endpoints)
	start := int(c.cur.Load())
	var lastErr error
	for i := 0; i < n; i++ {
		idx := (start + i) % n
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.Endpoints[idx]+path, nil)
		if err != nil {
			return nil, err
		}
		if c.authz != nil {
			req.Header["Authorization"] = c.authz
		}
		oteltrace.Inject(ctx, req.Header)
		resp, err := c.cfg.HTTPClient.Do(req)
		if err != nil {
			lastErr = classify(ctx, probeDial(c.cfg.HTTPClient), c.cfg.Endpoints[idx], err)
			continue
		}
		if resp.StatusCode == http.StatusOK {
			c.cur.Store(int32(idx))
			return resp, nil
		}
		var eb api.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&eb)
		resp.Body.Close()
		e := &Error{Status: resp.StatusCode, Code: eb.Code, Message: eb.Message}
		if !wire.Retryable(resp.StatusCode) {
			return nil, e
		}
		lastErr = e
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%w: observe: %w", api.ErrCancelled, ctx.Err())
	}
	var e *Error
	if errors.As(lastErr, &e) {
		return nil, e
	}
	return nil, &unreachable{op: "observe", attempts: n, last: lastErr}
}
