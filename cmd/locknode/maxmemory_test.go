package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// `locknode dev --max-memory`: 1 MiB SETs fill the key space until the
// cluster answers Redis' OOM error; past the limit locks are still
// released (natively and by a Redis compare-and-delete), new locks and
// writes are refused on RESP and with 507 on HTTP, the figures show in
// INFO, /v1/status and /metrics, and a DEL makes room again.
// retryLeader runs op until it answers something other than a missing
// leader (RESP TRYAGAIN, HTTP 503): large entries on a loaded machine
// can cost an election, which clients ride out by retrying. Every op
// here may be repeated.
func retryLeader(t *testing.T, op func() error) error {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := op()
		if err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// postRetry is postJSON through retryLeader; it returns the status and
// the error body.
func postRetry(t *testing.T, httpAddr, path, body string) (int, api.ErrorBody) {
	t.Helper()
	var status int
	var eb api.ErrorBody
	retryLeader(t, func() error {
		resp, err := http.Post("http://"+httpAddr+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		status, eb = resp.StatusCode, api.ErrorBody{}
		json.NewDecoder(resp.Body).Decode(&eb)
		if status == http.StatusServiceUnavailable {
			return fmt.Errorf("TRYAGAIN %d %+v", status, eb)
		}
		return nil
	})
	return status, eb
}

func TestDevMaxMemory(t *testing.T) {
	const limit = 8 << 20
	lines, stop := startDev(t, "--nodes", "3", "--max-memory", "8MiB")
	defer stop()
	httpAddr, respAddr := lines[0][2], lines[0][3]
	rdb := respClient(t, respAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	if err := retryLeader(t, func() error { return rdb.SetNX(ctx, "redis-lock", "tok", time.Minute).Err() }); err != nil {
		t.Fatal(err)
	}
	if st, _ := postRetry(t, httpAddr, "/v1/locks/try", `{"key":"native-lock","owner":"o","ttl_ms":60000}`); st != http.StatusOK {
		t.Fatalf("acquire: %d", st)
	}

	big := strings.Repeat("x", 1<<20)
	stored := 0
	var oom error
	for i := 0; i < 300 && oom == nil; i++ {
		err := retryLeader(t, func() error { return rdb.Set(ctx, "big:"+strconv.Itoa(i), big, 0).Err() })
		switch {
		case err == nil:
			stored++
		case err.Error() == fsm.OOMText:
			oom = err
		default:
			t.Fatalf("SET %d: %v", i, err)
		}
	}
	if oom == nil || stored < limit>>20-1 || stored > limit>>20+1 {
		t.Fatalf("%d SETs of 1 MiB stored under an 8 MiB limit, then %v", stored, oom)
	}
	if err := retryLeader(t, func() error { return rdb.Set(ctx, "small", "v", 0).Err() }); err == nil || err.Error() != fsm.OOMText {
		t.Fatalf("SET past the limit: %v", err)
	}
	if err := retryLeader(t, func() error { return rdb.SetNX(ctx, "other-lock", "tok", time.Minute).Err() }); err == nil || err.Error() != fsm.OOMText {
		t.Fatalf("SET NX past the limit: %v", err)
	}
	if st, eb := postRetry(t, httpAddr, "/v1/locks/try", `{"key":"another","owner":"o","ttl_ms":60000}`); st != http.StatusInsufficientStorage || eb.Code != api.CodeOutOfMemory {
		t.Fatalf("HTTP acquire past the limit: %d %+v", st, eb)
	}

	// Releases work past the limit.
	if st, eb := postRetry(t, httpAddr, "/v1/locks/release", `{"key":"native-lock","owner":"o"}`); st != http.StatusOK {
		t.Fatalf("release past the limit: %d %+v", st, eb)
	}
	cad := `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`
	var n int
	err := retryLeader(t, func() (err error) { n, err = rdb.Eval(ctx, cad, []string{"redis-lock"}, "tok").Int(); return err })
	if err != nil || n != 1 {
		t.Fatalf("compare-and-delete past the limit: %d %v", n, err)
	}

	// Every view reports the figures (this node may apply a little after
	// the leader answered).
	waitFor(t, 10*time.Second, "status past the limit", func() (bool, string) {
		st := getStatus(t, httpAddr)
		return st.KeyspaceBytes > limit && st.KeyspaceMaxBytes == limit, fmt.Sprintf("%+v", st)
	})
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil || !strings.Contains(info, "\r\nmaxmemory:"+strconv.Itoa(limit)+"\r\n") ||
		!strings.Contains(info, "maxmemory_policy:noeviction") || !strings.Contains(info, "used_memory:") {
		t.Fatalf("INFO memory: %q %v", info, err)
	}
	mresp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	if !strings.Contains(string(metrics), "locknode_keyspace_max_bytes 8.388608e+06") ||
		!strings.Contains(string(metrics), "locknode_keyspace_bytes ") {
		t.Fatalf("metrics lack the key space gauges")
	}

	// DEL makes room; writes work again.
	for i := 0; i < stored; i++ {
		if err := retryLeader(t, func() error { return rdb.Del(ctx, "big:"+strconv.Itoa(i)).Err() }); err != nil {
			t.Fatalf("DEL past the limit: %v", err)
		}
	}
	if err := retryLeader(t, func() error { return rdb.Set(ctx, "small", "v", 0).Err() }); err != nil {
		t.Fatalf("SET after DEL: %v", err)
	}
	if st, eb := postRetry(t, httpAddr, "/v1/locks/try", `{"key":"another","owner":"o","ttl_ms":60000}`); st != http.StatusOK {
		t.Fatalf("acquire after DEL: %d %+v", st, eb)
	}
}
