package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/httpapi/httpapitest"
)

func Example() {
	// Serve any api.Locker: a cluster.Node in production.
	srv := httptest.NewServer(httpapi.New(httpapitest.NewFake(), httpapi.Config{}))
	defer srv.Close()

	post := func(path, body string) {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusOK {
			b = b[:strings.Index(string(b), `,"ttl_ms"`)] // the rest holds a deadline
			b = append(b, " ...}\n"...)
		}
		fmt.Print(resp.StatusCode, " ", string(b))
	}
	post("/v1/locks/try", `{"key":"job","owner":"a","ttl_ms":30000}`)
	post("/v1/locks/try", `{"key":"job","owner":"b","ttl_ms":30000}`)
	post("/v1/locks/try", `{"key":"job","owner":"b","ttl":30000}`)
	// Output:
	// 200 {"key":"job","owner":"a","fence":1 ...}
	// 423 {"code":"locked","message":"held by another owner (holder \"a\", fence 1)"}
	// 400 {"code":"bad_request","message":"bad request: unknown field \"ttl\"; see the API reference (docs/http-api.md) for this request's fields"}
}
