package pgfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
)

// pgBin returns the directory of Debian's PostgreSQL server binaries
// (package postgresql): /usr/lib/postgresql/<version>/bin, the newest
// version installed.
func pgBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	best, bestV := "/usr/lib/postgresql/15/bin", 0
	for _, d := range dirs {
		if v, err := strconv.Atoi(filepath.Base(filepath.Dir(d))); err == nil && v > bestV {
			best, bestV = d, v
		}
	}
	return best
}

// skipOrFail skips the test, or fails it under LOCKNODE_CI=1, where the
// server must be there.
func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("LOCKNODE_CI") == "1" {
		t.Fatalf("LOCKNODE_CI=1 but %s", why)
	}
	t.Skip(why)
}

// startPostgres starts a throw-away PostgreSQL server listening on a unix
// socket in a private directory and returns a *sql.DB on it. The server
// is stopped and its files removed at cleanup. PostgreSQL refuses to run
// as root, so as root it runs as nobody (via runuser).
func startPostgres(t *testing.T) *sql.DB {
	t.Helper()
	bin := pgBin()
	initdb, postgres := filepath.Join(bin, "initdb"), filepath.Join(bin, "postgres")
	for _, p := range []string{initdb, postgres} {
		if _, err := os.Stat(p); err != nil {
			skipOrFail(t, fmt.Sprintf("no PostgreSQL server binaries (%v); install Debian's postgresql", err))
		}
	}
	// Not t.TempDir: its parent is private to root, and as root the
	// server runs as another user who must reach its files.
	dir, err := os.MkdirTemp("", "pgfence")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, sock := filepath.Join(dir, "data"), filepath.Join(dir, "sock")
	for _, d := range []string{data, sock} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// As root, the server's processes run as nobody, set directly on the
	// child (no runuser in between, so signals reach the server itself).
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		for _, d := range []string{data, sock} {
			if err := os.Chown(d, 65534, 65534); err != nil { // nobody
				skipOrFail(t, fmt.Sprintf("cannot hand the data directory to nobody: %v", err))
			}
		}
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	cmd := func(ctx context.Context, args ...string) *exec.Cmd {
		c := exec.CommandContext(ctx, args[0], args[1:]...)
		c.Dir = sock
		c.Env = append(os.Environ(), "LC_ALL=C")
		c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		c.WaitDelay = 10 * time.Second
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := cmd(ctx, initdb, "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	srv := cmd(context.Background(), postgres, "-D", data, "-k", sock, "-p", "5432",
		"-c", "listen_addresses=", "-c", "fsync=off", "-c", "max_connections=40")
	// A file, not a pipe: a pipe would tie Wait to every process that
	// inherited it.
	logPath := filepath.Join(dir, "server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	srv.Stdout, srv.Stderr = logFile, logFile
	logs := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	// Ends when the server exits: at cleanup (SIGINT is a fast shutdown) or
	// when it fails to start.
	go func() { exited <- srv.Wait() }()
	t.Cleanup(func() {
		_ = srv.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = srv.Process.Kill()
			<-exited
		}
	})

	db, err := sql.Open("pgx", fmt.Sprintf("host=%s port=5432 user=postgres dbname=postgres sslmode=disable", sock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// Wait for the server to accept connections (a condition, with a
	// deadline), or for it to die.
	deadline := time.Now().Add(time.Minute)
	for {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		err := db.PingContext(pctx)
		pcancel()
		if err == nil {
			return db
		}
		select {
		case werr := <-exited:
			exited <- werr
			t.Fatalf("postgres exited: %v\n%s", werr, logs())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("postgres not ready within a minute: %v\n%s", errors.Join(err), logs())
		}
	}
}
