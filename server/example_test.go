package server_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/server"
)

// A single-node cluster serving HTTP and RESP on ports of its own.
func Example() {
	dir, err := os.MkdirTemp("", "locknode-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := server.DefaultConfig()
	cfg.HTTPAddr, cfg.RESPAddr = "127.0.0.1:0", "127.0.0.1:0" // any free port
	cfg.Cluster.ID, cfg.Cluster.DataDir, cfg.Cluster.Bootstrap = "n1", dir, true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	lease, err := srv.Node().Acquire(ctx, api.AcquireRequest{Key: "jobs/nightly", Owner: "me", TTLMs: 10000})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("held", lease.Key, "serving HTTP:", srv.HTTPAddr() != "", "RESP:", srv.RESPAddr() != "")
	// Output: held jobs/nightly serving HTTP: true RESP: true
}
