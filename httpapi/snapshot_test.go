package httpapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/httpapi/httpapitest"
	"github.com/locknode/locknode/wire"
)

// cutSnapshotter fails after the stream started.
type cutSnapshotter struct{ *httpapitest.Fake }

func (c cutSnapshotter) WriteSnapshot(ctx context.Context, w io.Writer, start func(uint64)) error {
	start(7)
	io.WriteString(w, "partial")
	return errors.New("disk gone")
}

// TestSnapshotRoute: GET /v1/snapshot streams the snapshot with its index
// in a header; a failure before the stream is a JSON error, one during it
// cuts the connection so the client cannot take it for a whole snapshot.
func TestSnapshotRoute(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := newServer(t, fake, httpapi.Config{})
	resp, err := http.Get(srv.URL + wire.PathSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || resp.Header.Get(wire.HeaderSnapshotIndex) != "0" {
		t.Fatalf("%d %v %q %v", resp.StatusCode, resp.Header, body, err)
	}
	if err := fsm.New(fsm.Config{}).Restore(bytes.NewReader(body)); err != nil {
		t.Fatalf("the snapshot does not restore: %v", err)
	}
	// The trailer is the SHA-256 of the bytes sent; a Locker without
	// raft sends no term.
	if sum := sha256.Sum256(body); resp.Trailer.Get(wire.TrailerSnapshotSHA256) != hex.EncodeToString(sum[:]) {
		t.Fatalf("trailer %q, the body hashes to %x", resp.Trailer.Get(wire.TrailerSnapshotSHA256), sum)
	}
	if v := resp.Header.Get(wire.HeaderSnapshotTerm); v != "" {
		t.Fatalf("term %q from a Locker without raft", v)
	}

	fake.Fail(api.ErrNoLeader)
	resp, err = http.Get(srv.URL + wire.PathSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"code"`) {
		t.Fatalf("failure before the stream: %d %s", resp.StatusCode, body)
	}

	cut := newServer(t, cutSnapshotter{httpapitest.NewFake()}, httpapi.Config{})
	resp, err = http.Get(cut.URL + wire.PathSnapshot)
	if err != nil {
		return // cut before the status line got out: as good
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || err == nil || resp.Trailer.Get(wire.TrailerSnapshotSHA256) != "" {
		t.Fatalf("a cut stream read as whole: %d %v %v", resp.StatusCode, err, resp.Trailer)
	}
}
