package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
)

const cmdTestUsers = `user admin on >adm1n-s3cret ~* &* +@all
user app on >app-s3cret ~app:* +@read +@write
`

// TestServeUsers: `serve --users` authenticates HTTP, RESP, the client
// and the CLI; forced releases, membership changes and reloads are
// audited in the log and /metrics; SIGHUP re-reads the file; no password
// reaches the log or /metrics.
func TestServeUsers(t *testing.T) {
	dir := t.TempDir()
	usersPath := filepath.Join(dir, "users.acl")
	if err := os.WriteFile(usersPath, []byte(cmdTestUsers), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	// --users needs the peer port closed too (peerSecurity).
	peerCA := newTestCA(t, "peer CA")
	pcf, pkf := peerCA.issue("n1")
	n := startServeTo(t, &logs, "--id", "n1", "--data", filepath.Join(dir, "data"), "--bootstrap", "--log-level", "debug",
		"--http-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0", "--raft-addr", "127.0.0.1:0", "--users", usersPath,
		"--peer-tls-cert", pcf, "--peer-tls-key", pkf, "--peer-tls-ca", peerCA.caFile)
	httpURL, respAddr := "http://"+n[2], n[3]
	ctx := context.Background()

	// HTTP: 401 without credentials.
	resp, err := http.Get(httpURL + "/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("no credentials: %d %v", resp.StatusCode, resp.Header)
	}

	// The Go client as app: its namespace only, no forced release.
	app, err := client.New(client.Config{Endpoints: []string{httpURL}, Username: "app", Password: "app-s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.TryAcquire(ctx, api.AcquireRequest{Key: "app:job", Owner: "w1", TTLMs: 60000}); err != nil {
		t.Fatalf("app acquire: %v", err)
	}
	if _, err := app.Release(ctx, api.ReleaseRequest{Key: "app:job", Force: true}); err == nil {
		t.Fatal("app force-released")
	}

	// RESP as app.
	rc := redis.NewClient(&redis.Options{Addr: respAddr, Username: "app", Password: "app-s3cret", MaxRetries: -1})
	t.Cleanup(func() { rc.Close() })
	if ok, err := rc.SetNX(ctx, "app:r", "tok", time.Minute).Result(); err != nil || !ok {
		t.Fatalf("RESP SET NX: %v %v", ok, err)
	}
	if err := rc.Get(ctx, "other").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("RESP outside the namespace: %v", err)
	}

	// The admin forces the release, from the CLI's client (env password).
	t.Setenv("LOCKNODE_USER", "admin")
	t.Setenv("LOCKNODE_PASSWORD", "adm1n-s3cret")
	var out, errb syncBuffer
	if code := runStatus(ctx, []string{"--endpoints", httpURL}, &out, &errb); code != 0 {
		t.Fatalf("status as admin: %d %s", code, errb.String())
	}
	admin, err := client.New(client.Config{Endpoints: []string{httpURL}, Username: "admin", Password: "adm1n-s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := admin.Release(ctx, api.ReleaseRequest{Key: "app:job", Force: true}); err != nil || !res.Released {
		t.Fatalf("admin forced release: %+v %v", res, err)
	}

	// SIGHUP: app's password changes.
	if err := os.WriteFile(usersPath, []byte(strings.Replace(cmdTestUsers, "app-s3cret", "app-n3w", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the new password to work", func() (bool, string) {
		c := redis.NewClient(&redis.Options{Addr: respAddr, Username: "app", Password: "app-n3w", MaxRetries: -1})
		defer c.Close()
		err := c.Ping(ctx).Err()
		return err == nil, errString(err)
	})

	// Audit: log lines and counters.
	metrics := adminGet(t, httpURL+"/metrics")
	for _, want := range []string{
		`locknode_audit_events_total{event="force_release"} 1`,
		`locknode_audit_events_total{event="users_reload"} 1`,
		`locknode_auth_failures_total{proto="http",reason="credentials"}`,
		`locknode_auth_failures_total{proto="resp",reason="permission"}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	waitFor(t, 5*time.Second, "the audit lines", func() (bool, string) {
		l := logs.String()
		return strings.Contains(l, "audit: event=force_release user=admin") &&
			strings.Contains(l, "key=app:job") && strings.Contains(l, "event=users_reload"), l
	})
	status := adminGet(t, httpURL+"/v1/status")
	for _, secret := range []string{"s3cret", "app-n3w"} {
		for what, text := range map[string]string{"log": logs.String(), "metrics": metrics, "status": status} {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows a password", what)
			}
		}
	}
	info, err := redis.NewClient(&redis.Options{Addr: respAddr, Username: "admin", Password: "adm1n-s3cret"}).Info(ctx, "everything").Result()
	if err != nil || strings.Contains(info, "s3cret") {
		t.Errorf("INFO: %v (shows a password: %v)", err, strings.Contains(info, "s3cret"))
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func adminGet(t *testing.T, url string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.SetBasicAuth("admin", "adm1n-s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

func TestBeyondLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:80": false, "[::1]:80": false, "localhost:80": false,
		":80": true, "0.0.0.0:80": true, "10.0.0.1:80": true, "example.com:80": true,
	} {
		if got := beyondLoopback(addr); got != want {
			t.Errorf("beyondLoopback(%q) = %v", addr, got)
		}
	}
}

// TestDevUsers: `locknode dev --users` checks requests on every node.
func TestDevUsers(t *testing.T) {
	usersPath := filepath.Join(t.TempDir(), "users.acl")
	if err := os.WriteFile(usersPath, []byte(cmdTestUsers), 0o600); err != nil {
		t.Fatal(err)
	}
	lines, _ := startDev(t, "--nodes", "2", "--users", usersPath)
	for _, m := range lines {
		resp, err := http.Get("http://" + m[2] + "/v1/status")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s without credentials: %d", m[1], resp.StatusCode)
		}
		adminGet(t, "http://"+m[2]+"/v1/status")
	}
}

// TestServeBadUsersFile: a users file with an error stops serve at once
// (exit 2), naming the line, never the password.
func TestServeBadUsersFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.acl")
	if err := os.WriteFile(path, []byte("user a on >t0p-secret +@dangerous\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var errb syncBuffer
	code := run([]string{"serve", "--id", "a", "--data", t.TempDir(), "--users", path}, io.Discard, &errb)
	if code != 2 || !strings.Contains(errb.String(), "line 1") || strings.Contains(errb.String(), "t0p-secret") {
		t.Fatalf("exit %d: %q", code, errb.String())
	}
	if code := run([]string{"serve", "--id", "a", "--data", t.TempDir(), "--users", path + ".missing"}, io.Discard, io.Discard); code != 2 {
		t.Fatalf("missing file: exit %d", code)
	}
}
