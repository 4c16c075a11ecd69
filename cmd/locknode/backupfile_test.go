package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/testcluster"
	"github.com/locknode/locknode/transport"
	"github.com/locknode/locknode/wire"
)

// TestBackupChecksum: a saved backup carries its index, term and a
// SHA-256 that matched the node's; status and restore verify it and
// refuse a damaged or truncated copy (restore before creating anything);
// a file without the envelope (an older release's) still reads and
// restores, without a checksum.
func TestBackupChecksum(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := testcluster.New(t, 1, testcluster.Options{NoRESP: true})
	if _, err := c.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c"} {
		if _, err := c.Leader().TryAcquire(ctx, api.AcquireRequest{Key: k, Owner: "o", TTLMs: 600_000}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (int, string, string) {
		var out, errb syncBuffer
		code := runSnapshot(ctx, args, &out, &errb)
		return code, out.String(), errb.String()
	}
	endpoints := strings.Join(c.Endpoints(), ",")

	// The stream: a term header and a trailer with the SHA-256 of its bytes.
	cl, err := client.New(client.Config{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	st, err := cl.SnapshotStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.SHA256() != "" {
		t.Errorf("the trailer is known before the body was read: %q", st.SHA256())
	}
	raw, err := io.ReadAll(st.Body)
	st.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	rawSum := sha256.Sum256(raw)
	if st.Term == 0 || st.Index == 0 || st.SHA256() != hex.EncodeToString(rawSum[:]) {
		t.Fatalf("stream: index %d term %d sha256 %q, the body hashes to %x", st.Index, st.Term, st.SHA256(), rawSum)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "backup.snap")
	code, out, errb := run("save", file, "--endpoints", endpoints)
	if code != 0 || !strings.Contains(out, "matched the sha256 the node sent") {
		t.Fatalf("save: %d %s %s", code, out, errb)
	}
	code, out, errb = run("status", file)
	if code != 0 {
		t.Fatalf("status: %d %s %s", code, out, errb)
	}
	for _, want := range []string{"backup format:   1\n", "checksum:        verified (sha256 ", "locks:           3 ", "verified:        true"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "not recorded") {
		t.Errorf("status of a new backup:\n%s", out)
	}
	code, out, errb = run("status", "--json", file)
	var info snapshotInfo
	if code != 0 || json.Unmarshal([]byte(out), &info) != nil {
		t.Fatalf("status --json: %d %s %s", code, out, errb)
	}
	if info.Term == 0 || info.Term > st.Term+5 || info.Index < st.Index || info.Envelope != backupVersion || len(info.ChecksumSHA256) != 64 || !strings.Contains(info.Checksum, info.ChecksumSHA256) {
		t.Fatalf("status --json: %+v (stream term %d index %d)", info, st.Term, st.Index)
	}

	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte{}, good...)
	flipped[len(flipped)/2] ^= 0x01
	cases := []struct {
		name, want string
		b          []byte
	}{
		{"flipped", "checksum mismatch", flipped},
		{"truncated", "cut short", good[:len(good)/2]},
		{"cut-in-end-line", "not whole", good[:len(good)-1]},
		{"shortened", "checksum mismatch", append(append([]byte{}, good[:len(good)/2]...), good[len(good)/2+1:]...)},
	}
	for _, tc := range cases {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, tc.b, 0o600); err != nil {
			t.Fatal(err)
		}
		if code, out, errb := run("status", p); code != exitLockFailed || out != "" || !strings.Contains(errb, tc.want) || !strings.Contains(errb, p) {
			t.Errorf("status %s: exit %d, stdout %q, stderr %q", tc.name, code, out, errb)
		}
		data := filepath.Join(t.TempDir(), "new", "data")
		code, out, errb := run("restore", p, "--data", data, "--id", "m1", "--peers", "m1=127.0.0.1:1")
		if code != exitLockFailed || !strings.Contains(errb, tc.want) {
			t.Errorf("restore %s: exit %d, stdout %q, stderr %q", tc.name, code, out, errb)
		}
		if _, err := os.Stat(filepath.Dir(data)); !os.IsNotExist(err) {
			t.Errorf("restore %s left %s behind: %v", tc.name, filepath.Dir(data), err)
		}
		t.Logf("%s: %s", tc.name, strings.TrimSpace(errb))
	}

	// An older release's backup: the bare snapshot.
	oldFile := filepath.Join(dir, "old.snap")
	if err := os.WriteFile(oldFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errb = run("status", oldFile)
	if code != 0 || !strings.Contains(out, "checksum:        no checksum (a backup from an older release)\n") ||
		!strings.Contains(out, "term:            not recorded (a backup from an older release)\n") || !strings.Contains(out, fmt.Sprintf("index:           %d\n", st.Index)) {
		t.Fatalf("status of an old backup: %d %s %s", code, out, errb)
	}
	tr, err := transport.New(transport.Config{BindAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	data := filepath.Join(t.TempDir(), "data")
	if code, out, errb := run("restore", oldFile, "--data", data, "--id", "m1", "--peers", "m1="+tr.Addr().String()); code != 0 {
		t.Fatalf("restore of an old backup: %d %s %s", code, out, errb)
	}
	if entries, err := os.ReadDir(data); err != nil || len(entries) == 0 {
		t.Fatalf("restore of an old backup wrote nothing: %v %v", entries, err)
	}

	// A bare file that does not decode: RestoreSnapshot's refusal, and
	// no directory left behind either.
	junk := filepath.Join(dir, "junk.snap")
	if err := os.WriteFile(junk, raw[:len(raw)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	data = filepath.Join(t.TempDir(), "x", "data")
	if code, _, errb := run("restore", junk, "--data", data, "--id", "m1", "--peers", "m1=127.0.0.1:1"); code != exitLockFailed || !strings.Contains(errb, "not a valid snapshot") {
		t.Errorf("restore of a bad bare snapshot: %d %s", code, errb)
	}
	if _, err := os.Stat(filepath.Dir(data)); !os.IsNotExist(err) {
		t.Errorf("a failed restore left %s behind: %v", filepath.Dir(data), err)
	}
}

// TestBackupSaveTransit: save checks the stream against the node's
// SHA-256 trailer, refusing a stream damaged on the way (and keeping no
// file), and takes the checksum itself from a node that sends none.
func TestBackupSaveTransit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := testcluster.New(t, 1, testcluster.Options{NoRESP: true})
	if _, err := c.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Leader().TryAcquire(ctx, api.AcquireRequest{Key: "a", Owner: "o", TTLMs: 600_000}); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(client.Config{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	body, idx, err := cl.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(body)
	body.Close()
	if err != nil {
		t.Fatal(err)
	}
	// A stand-in node sending raw with the trailer it is given ("": none,
	// as an older node).
	serve := func(trailer string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(wire.HeaderSnapshotIndex, fmt.Sprint(idx))
			if trailer != "" {
				w.Header().Set("Trailer", wire.TrailerSnapshotSHA256)
			}
			_, _ = w.Write(raw)
			if trailer != "" {
				w.Header().Set(wire.TrailerSnapshotSHA256, trailer)
			}
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	run := func(args ...string) (int, string, string) {
		var out, errb syncBuffer
		code := runSnapshot(ctx, args, &out, &errb)
		return code, out.String(), errb.String()
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "backup.snap")
	wrong := strings.Repeat("ab", 32)
	if code, out, errb := run("save", file, "--endpoints", serve(wrong)); code != exitLockFailed || !strings.Contains(errb, "damaged on the way") || !strings.Contains(errb, wrong) {
		t.Fatalf("save of a damaged stream: %d %s %s", code, out, errb)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a refused save left %v", entries)
	}
	code, out, errb := run("save", file, "--endpoints", serve(""))
	if code != 0 || !strings.Contains(out, "the node sent no sha256") {
		t.Fatalf("save from a node without the trailer: %d %s %s", code, out, errb)
	}
	code, out, errb = run("status", file)
	if code != 0 || !strings.Contains(out, "checksum:        verified (sha256 ") || !strings.Contains(out, "term:            not recorded (the node that sent it did not say)") {
		t.Fatalf("status: %d %s %s", code, out, errb)
	}
}
