package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/httpapi/httpapitest"
	"github.com/locknode/locknode/wire"
)

// openAPI is the embedded document with its schemas compiled on demand
// (JSON Schema 2020-12, as OpenAPI 3.1 uses).
type openAPI struct {
	doc   map[string]any
	c     *jsonschema.Compiler
	cache map[string]*jsonschema.Schema
}

const docURL = "mem:///openapi.json"

func loadOpenAPI(t testing.TB) *openAPI {
	t.Helper()
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(httpapi.OpenAPI()))
	if err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(docURL, raw); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(httpapi.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	return &openAPI{doc: doc, c: c, cache: map[string]*jsonschema.Schema{}}
}

// pointer is the JSON pointer of tokens.
func pointer(tokens ...string) string {
	var b strings.Builder
	for _, tok := range tokens {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
		b.WriteString("/" + url.PathEscape(tok))
	}
	return b.String()
}

// lookup walks the document; nil when a token is missing.
func (o *openAPI) lookup(tokens ...string) any {
	var v any = o.doc
	for _, tok := range tokens {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[tok]
	}
	return v
}

// validate checks body (JSON) against the schema at tokens.
func (o *openAPI) validate(t testing.TB, body []byte, tokens ...string) error {
	t.Helper()
	ptr := pointer(tokens...)
	sch, ok := o.cache[ptr]
	if !ok {
		var err error
		if sch, err = o.c.Compile(docURL + "#" + ptr); err != nil {
			t.Fatalf("compiling %s: %v", ptr, err)
		}
		o.cache[ptr] = sch
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	return sch.Validate(v)
}

// docRoute turns a served mux pattern into the document's "METHOD path".
func docRoute(pattern string) string {
	pattern = strings.ReplaceAll(pattern, "{$}", "")
	return strings.ReplaceAll(pattern, "...}", "}")
}

var docMethods = []string{"get", "put", "post", "delete", "patch", "head", "options"}

// TestOpenAPIRoutes: the document lists exactly the routes a node with
// every optional part serves, and each path in it is answered by its
// route (not by the catch-all 404), with GET /v1/openapi.json serving
// the document itself.
func TestOpenAPIRoutes(t *testing.T) {
	ns := startNodeServer(t, httpapi.Config{Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "x 1\n") })})
	o := loadOpenAPI(t)
	served := map[string]bool{}
	for _, p := range httpapi.Routes(ns.srv.Config.Handler) {
		served[docRoute(p)] = true
	}
	if len(served) < 20 {
		t.Fatalf("Routes lists %d routes", len(served))
	}
	inDoc := map[string]bool{}
	for path, item := range o.doc["paths"].(map[string]any) {
		for m := range item.(map[string]any) {
			if slices.Contains(docMethods, m) {
				inDoc[strings.ToUpper(m)+" "+path] = true
			}
		}
	}
	for r := range served {
		if !inDoc[r] {
			method, path, _ := strings.Cut(r, " ")
			t.Errorf("route %q is served but not in httpapi/openapi.json: add op{method: %q, path: %q, id: ..., summary: ..., req: <request body type>, answers: ...} to ops() in internal/openapigen/gen.go, then run go generate ./httpapi", r, method, path)
		}
	}
	for r := range inDoc {
		if !served[r] {
			t.Errorf("httpapi/openapi.json lists %q, which no route serves: remove it from ops() in internal/openapigen/gen.go (or register the route in httpapi.New), then run go generate ./httpapi", r)
		}
	}
	// The permission each operation states is the one the server checks.
	for _, p := range httpapi.Routes(ns.srv.Config.Handler) {
		method, path, _ := strings.Cut(docRoute(p), " ")
		op, ok := o.lookup("paths", path, strings.ToLower(method)).(map[string]any)
		if !ok {
			continue // reported above
		}
		perm, _ := op["x-permission"].(string)
		if cat, ok := httpapi.RouteCategories[p]; !ok {
			if sec, _ := op["security"].([]any); perm != "" || sec == nil || len(sec) != 0 {
				t.Errorf("%s is public, but the document says x-permission %q, security %v", p, perm, op["security"])
			}
		} else if perm != cat.String() {
			t.Errorf("%s needs %s, but the document says x-permission %q: fix its perm in internal/openapigen/gen.go", p, cat, perm)
		}
	}
	// Each path of the document reaches a route, with its parameters
	// filled in.
	fill := strings.NewReplacer("{key}", "probe/k", "{id}", "s1", "{name}", "e")
	cl := ns.srv.Client()
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for r := range inDoc {
		method, path, _ := strings.Cut(r, " ")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, method, ns.srv.URL+fill.Replace(path), strings.NewReader("{}"))
		req.Header.Set("Content-Type", wire.ContentTypeJSON)
		resp, err := cl.Do(req)
		if err != nil {
			cancel()
			t.Errorf("%s: %v", r, err)
			continue
		}
		b := make([]byte, 512)
		n, _ := io.ReadAtLeast(resp.Body, b, 1) // a stream (observe) need not end
		resp.Body.Close()
		cancel()
		if resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotFound && strings.Contains(string(b[:n]), "no route") {
			t.Errorf("%s: answered by no route: %d %s", r, resp.StatusCode, b[:n])
		}
	}
	// The document is served as it is embedded.
	if st, raw := ns.get(t, "", "", wire.PathOpenAPI, nil); st != 200 || raw != string(httpapi.OpenAPI()) {
		t.Errorf("GET %s: %d, %d bytes, want the embedded document", wire.PathOpenAPI, st, len(raw))
	}
}

// TestOpenAPIExamples: every example in the document validates against
// its schema.
func TestOpenAPIExamples(t *testing.T) {
	o := loadOpenAPI(t)
	n := 0
	for path, item := range o.doc["paths"].(map[string]any) {
		for m, opv := range item.(map[string]any) {
			op := opv.(map[string]any)
			if rb, ok := op["requestBody"].(map[string]any); ok {
				for ct, mt := range rb["content"].(map[string]any) {
					if ex, ok := mt.(map[string]any)["example"]; ok {
						b, _ := json.Marshal(ex)
						n++
						if err := o.validate(t, b, "paths", path, m, "requestBody", "content", ct, "schema"); err != nil {
							t.Errorf("%s %s request example: %v", m, path, err)
						}
					}
				}
			}
			for code, rv := range op["responses"].(map[string]any) {
				content, _ := rv.(map[string]any)["content"].(map[string]any)
				for ct, mt := range content {
					if ex, ok := mt.(map[string]any)["example"]; ok {
						b, _ := json.Marshal(ex)
						n++
						if err := o.validate(t, b, "paths", path, m, "responses", code, "content", ct, "schema"); err != nil {
							t.Errorf("%s %s %s example: %v", m, path, code, err)
						}
					}
				}
			}
		}
	}
	if n < 30 {
		t.Errorf("only %d examples", n)
	}
}

// TestOpenAPISchemasRefuse: the schemas are strict enough to fail: an
// answer with an undocumented field, a wrong type or a missing field, and
// a request without a required field.
func TestOpenAPISchemasRefuse(t *testing.T) {
	o := loadOpenAPI(t)
	lease := []string{"paths", wire.PathAcquire, "post", "responses", "200", "content", wire.ContentTypeJSON, "schema"}
	acquire := []string{"paths", wire.PathAcquire, "post", "requestBody", "content", wire.ContentTypeJSON, "schema"}
	if err := o.validate(t, []byte(`{"key":"k","owner":"o","fence":7,"ttl_ms":1000}`), lease...); err != nil {
		t.Fatalf("a valid lease refused: %v", err)
	}
	for _, bad := range []string{
		`{"key":"k","owner":"o","fence":7,"ttl_ms":1000,"surprise":1}`,
		`{"key":"k","owner":"o","fence":"7","ttl_ms":1000}`,
		`{"key":"k","owner":"o","ttl_ms":1000}`,
		`{"key":"k","owner":"o","fence":-1,"ttl_ms":1000}`,
	} {
		if o.validate(t, []byte(bad), lease...) == nil {
			t.Errorf("lease %s accepted", bad)
		}
	}
	if o.validate(t, []byte(`{"key":"k","ttl_ms":1000}`), acquire...) == nil {
		t.Error("an acquire without owner accepted")
	}
	if o.validate(t, []byte(`{"code":"no_such_code","message":"m"}`), "components", "schemas", "ErrorBody") == nil {
		t.Error("an error body with an unknown code accepted")
	}
}

// recorder sends requests to a real node and checks each request body
// and answer against the document's schema for the operation.
type recorder struct {
	t    *testing.T
	o    *openAPI
	ns   *nodeServer
	ok   map[string]bool // "METHOD path" answered 2xx and checked
	errs []string        // error answers checked against their status's description
}

// call sends body (JSON; nil: none) as method to url, the operation
// being the document's "method tmpl"; it returns the status and body.
// A request the test sends on purpose against the schema says so with
// badRequest.
func (rc *recorder) call(method, tmpl, url string, body any, badRequest bool) (int, []byte) {
	t := rc.t
	t.Helper()
	m := strings.ToLower(method)
	op, ok := rc.o.lookup("paths", tmpl, m).(map[string]any)
	if !ok {
		t.Fatalf("%s %s is not in the document", method, tmpl)
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		err = rc.o.validate(t, b, "paths", tmpl, m, "requestBody", "content", wire.ContentTypeJSON, "schema")
		if badRequest != (err != nil) {
			t.Errorf("%s %s request %s: schema says %v, want invalid=%v", method, tmpl, b, err, badRequest)
		}
		rd = bytes.NewReader(b)
	} else if op["requestBody"] != nil {
		t.Errorf("%s %s sent without the body the document requires", method, tmpl)
	}
	req, err := http.NewRequest(method, rc.ns.srv.URL+url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", wire.ContentTypeJSON)
	resp, err := rc.ns.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	rc.check(method, tmpl, resp, raw)
	return resp.StatusCode, raw
}

// check validates one answer against the operation's response for its
// status (else its default).
func (rc *recorder) check(method, tmpl string, resp *http.Response, raw []byte) {
	t := rc.t
	t.Helper()
	m := strings.ToLower(method)
	code := fmt.Sprint(resp.StatusCode)
	if rc.o.lookup("paths", tmpl, m, "responses", code) == nil {
		code = "default"
		if rc.o.lookup("paths", tmpl, m, "responses", code) == nil {
			t.Errorf("%s %s answered %d, which the document does not list: %s", method, tmpl, resp.StatusCode, raw)
			return
		}
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	resolved := rc.o.lookup("paths", tmpl, m, "responses", code)
	tokens := []string{"paths", tmpl, m, "responses", code, "content", ct}
	if ref, ok := resolved.(map[string]any)["$ref"].(string); ok {
		// #/components/responses/Error
		tokens = append(strings.Split(strings.TrimPrefix(ref, "#/"), "/"), "content", ct)
	}
	switch {
	case rc.o.lookup(tokens...) == nil:
		if len(raw) > 0 {
			t.Errorf("%s %s answered %d with a %q body the document does not describe: %.200s", method, tmpl, resp.StatusCode, ct, raw)
		}
	case rc.o.lookup(append(tokens, "schema")...) != nil:
		lines := [][]byte{raw}
		if ct == wire.ContentTypeNDJSON {
			lines = bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
		}
		for _, l := range lines {
			if err := rc.o.validate(t, l, append(tokens, "schema")...); err != nil {
				t.Errorf("%s %s answered %d %s, which does not match the document: %v", method, tmpl, resp.StatusCode, l, err)
			}
		}
	}
	var eb api.ErrorBody
	if resp.StatusCode >= 400 && code != "default" && json.Unmarshal(raw, &eb) == nil {
		rc.errs = append(rc.errs, fmt.Sprintf("%s %s %d %s", method, tmpl, resp.StatusCode, eb.Code))
		if d, _ := resolved.(map[string]any)["description"].(string); !strings.Contains(d, eb.Code) {
			t.Errorf("%s %s answered %d %s, a code its description does not name: %q", method, tmpl, resp.StatusCode, eb.Code, d)
		}
	}
	if resp.StatusCode < 300 {
		rc.ok[method+" "+tmpl] = true
	}
}

// TestOpenAPIMatchesAnswers: real requests and the real node's answers
// to them, one or more for every operation, validate against the
// document's schemas, errors included.
// handsOver is a Locker whose leadership transfers succeed at once.
type handsOver struct{ *httpapitest.Fake }

func (handsOver) TransferLeadership(_ context.Context, id string) (api.TransferResult, error) {
	return api.TransferResult{Previous: "n1", Leader: id}, nil
}

func TestOpenAPIMatchesAnswers(t *testing.T) {
	ns := startNodeServer(t, httpapi.Config{Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "x 1\n") })})
	rc := &recorder{t: t, o: loadOpenAPI(t), ns: ns, ok: map[string]bool{}}
	var sess api.SessionInfo
	st, raw := rc.call("POST", wire.PathSessions, wire.PathSessions, wire.SessionRequest{TTLMs: 10000}, false)
	if st != 200 || json.Unmarshal(raw, &sess) != nil {
		t.Fatalf("session: %d %s", st, raw)
	}
	sp := wire.PathSessions + "/" + sess.ID
	rc.call("PUT", wire.PathSessions+"/{id}/keepalive", sp+"/keepalive", nil, false)
	rc.call("POST", wire.PathSessions+"/{id}/keepalive", sp+"/keepalive", nil, false)

	acq := api.AcquireRequest{Key: "jobs/nightly", Owner: "w1", TTLMs: 30000, RequestID: "r1", Meta: map[string]string{"host": "h1"}, Reentrant: true, MaxHoldMs: 60000}
	if st, raw := rc.call("POST", wire.PathAcquire, wire.PathAcquire, acq, false); st != 200 {
		t.Fatalf("acquire: %d %s", st, raw)
	}
	acq.RequestID = "r2"
	rc.call("POST", wire.PathAcquire, wire.PathAcquire, acq, false) // reentrant: count 2
	rc.call("POST", wire.PathTry, wire.PathTry, api.AcquireRequest{Key: "jobs/nightly", Owner: "w2", TTLMs: 1000}, false)
	rc.call("POST", wire.PathTry, wire.PathTry, api.AcquireRequest{Keys: []string{"a/1", "a/2"}, Owner: "w3", TTLMs: 30000, Mode: api.ModeShared}, false)
	rc.call("POST", wire.PathTry, wire.PathTry, api.AcquireRequest{Key: "sem", Owner: "w4", Mode: api.ModeSemaphore, Permits: 2, Session: sess.ID, LockDelay: 100}, false)
	rc.call("POST", wire.PathTry, wire.PathTry, map[string]any{"key": "k", "owner": "o", "ttl_ms": 1000, "surprise": true}, true)
	rc.call("POST", wire.PathTry, wire.PathTry, map[string]any{"key": "k", "ttl_ms": 1000}, true)
	rc.call("POST", wire.PathExtend, wire.PathExtend, api.ExtendRequest{Key: "jobs/nightly", Owner: "w1", TTLMs: 30000}, false)
	rc.call("POST", wire.PathExtend, wire.PathExtend, api.ExtendRequest{Key: "jobs/nightly", Owner: "nobody", TTLMs: 30000}, false)

	// A waiter, to see one in inspect.
	waited := make(chan struct{})
	// Ends when the acquire is granted (the release below) or its 10 s wait runs out.
	go func() {
		defer close(waited)
		b, _ := json.Marshal(api.AcquireRequest{Key: "jobs/nightly", Owner: "w5", TTLMs: 30000, WaitMs: 10000, Meta: map[string]string{"host": "h5"}})
		req, _ := http.NewRequest("POST", ns.srv.URL+wire.PathAcquire, bytes.NewReader(b))
		req.Header.Set("Content-Type", wire.ContentTypeJSON)
		if resp, err := ns.srv.Client().Do(req); err == nil {
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err := rc.o.validate(t, raw, "paths", wire.PathAcquire, "post", "responses", "200", "content", wire.ContentTypeJSON, "schema"); resp.StatusCode != 200 || err != nil {
				t.Errorf("queued acquire: %d %s: %v", resp.StatusCode, raw, err)
			}
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var li api.LockInfo
		_, raw := rc.call("GET", wire.PathLockPrefix+"{key}", wire.PathLockPrefix+"jobs/nightly", nil, false)
		if json.Unmarshal(raw, &li) == nil && len(li.Waiters) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no waiter queued: %s", raw)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, with a deadline
	}
	rc.call("GET", wire.PathLockPrefix+"{key}", wire.PathLockPrefix+"jobs%2Fnightly?stale=true", nil, false)
	rc.call("GET", wire.PathLockPrefix+"{key}", wire.PathLockPrefix+"nothing-here", nil, false)
	// Blocking queries from index 0 answer at once: keys have changed.
	rc.call("GET", wire.PathLockPrefix+"{key}", wire.PathLockPrefix+"jobs%2Fnightly?index=0&wait=10s", nil, false)
	rc.call("GET", wire.PathLockPrefix+"{key}", wire.PathLockPrefix+"nothing-here?index=0&wait=10s", nil, false)
	rc.call("GET", wire.PathLockPrefix+"{key}", wire.PathLockPrefix+"nothing-here?index=x", nil, false)
	rc.call("GET", wire.PathLocks, wire.PathLocks+"?prefix=jobs/&index=0&wait=10s", nil, false)
	rc.call("GET", wire.PathLockPrefix+"{key}", wire.PathLockPrefix+"a//b", nil, false)
	rc.call("POST", wire.PathRelease, wire.PathRelease, api.ReleaseRequest{Key: "jobs/nightly", Owner: "w1", Reentrant: true}, false)
	rc.call("POST", wire.PathRelease, wire.PathRelease, api.ReleaseRequest{Key: "jobs/nightly", Owner: "w1"}, false)
	<-waited
	rc.call("POST", wire.PathRelease, wire.PathRelease, api.ReleaseRequest{Key: "jobs/nightly", Owner: "w1"}, false)
	rc.call("GET", wire.PathLockPrefix+"{key}"+wire.PathHistory, wire.PathLockPrefix+"jobs/nightly/history", nil, false)
	rc.call("GET", wire.PathLocks, wire.PathLocks+"?prefix=a/&limit=1", nil, false)
	rc.call("GET", wire.PathLocks, wire.PathLocks+"?limit=x", nil, false)
	rc.call("GET", wire.PathLocksByAge, wire.PathLocksByAge+"?order=newest", nil, false)
	rc.call("GET", wire.PathUILocks, wire.PathUILocks+"?state=held&order=oldest&meta=host", nil, false)
	rc.call("POST", wire.PathForceRelease, wire.PathForceRelease, api.ForceReleaseRequest{Key: "a/1", Reason: "test"}, false)
	rc.call("POST", wire.PathRelease, wire.PathRelease, api.ReleaseRequest{Key: "a/2", Force: true}, false)

	rc.call("POST", wire.PathFenceCheck, wire.PathFenceCheck, wire.FenceCheckRequest{Resource: "db", Token: 7}, false)
	rc.call("POST", wire.PathFenceCheck, wire.PathFenceCheck, wire.FenceCheckRequest{Resource: "db", Token: 3}, false)

	el := wire.PathElections + "sched"
	var ld api.Leader
	if st, raw := rc.call("POST", wire.PathElections+"{name}/campaign", el+"/campaign", wire.CampaignRequest{Value: "a:1", Session: sess.ID}, false); st != 200 || json.Unmarshal(raw, &ld) != nil {
		t.Fatalf("campaign: %d %s", st, raw)
	}
	rc.call("POST", wire.PathElections+"{name}/proclaim", el+"/proclaim", wire.ProclaimRequest{Value: "a:1", Token: ld.Token, NewValue: "a:2"}, false)
	rc.call("POST", wire.PathElections+"{name}/proclaim", el+"/proclaim", wire.ProclaimRequest{Value: "a:2", Token: "wrong", NewValue: "a:3"}, false)
	// Observe: the first line is the current leader.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	req, _ := http.NewRequestWithContext(ctx, "GET", ns.srv.URL+el+"/observe", nil)
	resp, err := ns.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadBytes('\n')
	cancel()
	resp.Body.Close()
	if err != nil {
		t.Fatalf("observe: %v", err)
	}
	rc.check("GET", wire.PathElections+"{name}/observe", resp, line)
	rc.call("POST", wire.PathElections+"{name}/resign", el+"/resign", wire.ResignRequest{Value: "a:2", Token: ld.Token}, false)
	rc.call("DELETE", wire.PathSessions+"/{id}", sp, nil, false)
	rc.call("DELETE", wire.PathSessions+"/{id}", sp, nil, false)

	rc.call("GET", wire.PathStatus, wire.PathStatus, nil, false)
	rc.call("GET", wire.PathActivity, wire.PathActivity, nil, false)
	rc.call("GET", wire.PathClusterView, wire.PathClusterView, nil, false)
	rc.call("POST", wire.PathClusterUpgrade, wire.PathClusterUpgrade, nil, false)
	rc.call("POST", wire.PathMembers, wire.PathMembers, wire.MemberRequest{ID: "n9", Address: "127.0.0.1:1"}, false)
	rc.call("DELETE", wire.PathMembers+"/{id}", wire.PathMembers+"/n9", nil, false)
	rc.call("GET", wire.PathLivez, wire.PathLivez, nil, false)
	rc.call("GET", wire.PathReadyz, wire.PathReadyz, nil, false)
	rc.call("GET", wire.PathMetrics, wire.PathMetrics, nil, false)
	rc.call("GET", wire.PathSnapshot, wire.PathSnapshot, nil, false)
	rc.call("GET", wire.PathOpenAPI, wire.PathOpenAPI, nil, false)
	rc.call("GET", wire.PathUI, wire.PathUI, nil, false)
	rc.call("POST", wire.PathTransferLeader, wire.PathTransferLeader, api.TransferRequest{ID: "n9"}, false)
	// A transfer needs a second voter: a Locker that hands over at once
	// gives the successful answer to check.
	ts := httptest.NewServer(httpapi.New(handsOver{httpapitest.NewFake()}, httpapi.Config{}))
	defer ts.Close()
	(&recorder{t: t, o: rc.o, ns: &nodeServer{srv: ts}, ok: rc.ok}).call("POST", wire.PathTransferLeader, wire.PathTransferLeader, api.TransferRequest{ID: "n2"}, false)

	if len(rc.errs) < 6 {
		t.Errorf("only %d error answers checked against their status: %q", len(rc.errs), rc.errs)
	}
	t.Logf("error answers checked: %q", rc.errs)
	// Every operation with a JSON answer was seen succeeding.
	for path, item := range rc.o.doc["paths"].(map[string]any) {
		for m, opv := range item.(map[string]any) {
			r200, _ := opv.(map[string]any)["responses"].(map[string]any)["200"].(map[string]any)
			content, _ := r200["content"].(map[string]any)
			js, _ := content[wire.ContentTypeJSON].(map[string]any)
			if js["schema"] == nil && content[wire.ContentTypeNDJSON] == nil {
				continue
			}
			if r := strings.ToUpper(m) + " " + path; !rc.ok[r] {
				t.Errorf("%s: no successful answer checked against the document", r)
			}
		}
	}
}
