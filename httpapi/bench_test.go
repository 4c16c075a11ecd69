package httpapi_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/wire"
)

// instant answers TryAcquire and Release at once: benchmarks through it
// measure the server side of the HTTP path only.
type instant struct {
	api.Locker // nil: the benchmark calls nothing else
	fence      atomic.Uint64
}

func (l *instant) TryAcquire(_ context.Context, req api.AcquireRequest) (api.Lease, error) {
	return api.Lease{Key: req.Key, Owner: req.Owner, Fence: l.fence.Add(1), TTLMs: req.TTLMs, Deadline: 1234567}, nil
}

func (l *instant) Release(context.Context, api.ReleaseRequest) (api.ReleaseResult, error) {
	return api.ReleaseResult{Released: true}, nil
}

// BenchmarkServerCycle sends a try and a release per op over one
// keep-alive connection with a minimal hand-written HTTP/1.1 client (the
// requests the Go client sends, byte for byte in what matters), so ns/op
// is the server side of a cycle's latency, without net/http's client.
func BenchmarkServerCycle(b *testing.B) {
	srv := httptest.NewServer(httpapi.New(&instant{}, httpapi.Config{}))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	host := srv.Listener.Addr().String()
	req := func(path, body string) []byte {
		return []byte("POST " + path + " HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: " +
			strconv.Itoa(len(body)) + "\r\nContent-Type: application/json\r\nAccept-Encoding: gzip\r\n\r\n" + body)
	}
	try := req(wire.PathTry, `{"key":"bench","owner":"owner-token-0123456789","ttl_ms":10000,"request_id":"0123456789abcdef0123456789abcdef"}`)
	rel := req(wire.PathRelease, `{"key":"bench","owner":"owner-token-0123456789","request_id":"fedcba9876543210fedcba9876543210"}`)
	br := bufio.NewReader(conn)
	roundTrip := func(r []byte) {
		if _, err := conn.Write(r); err != nil {
			b.Fatal(err)
		}
		n := -1
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			if line == "\r\n" {
				break
			}
			if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
				n, _ = strconv.Atoi(strings.TrimSpace(v))
			} else if strings.HasPrefix(line, "HTTP/1.1 ") && !strings.HasPrefix(line, "HTTP/1.1 200") {
				b.Fatalf("answer %q", line)
			}
		}
		if _, err := io.CopyN(io.Discard, br, int64(n)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		roundTrip(try)
		roundTrip(rel)
	}
}
