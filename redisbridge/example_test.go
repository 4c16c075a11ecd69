package redisbridge

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Redis client takes a lock with SET NX PX, reads its fencing token with
// LOCK.INFO and releases it with the usual compare-and-delete script.
func Example() {
	backend, stop := newFake() // in production: a *cluster.Node
	defer stop()
	srv, err := New(backend, Config{NodeID: "n1"})
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	// Ends when Close closes the listener.
	go srv.Serve(ln)
	defer srv.Close()

	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String()})
	defer c.Close()

	ok, _ := c.SetNX(ctx, "orders", "token-1", 30*time.Second).Result()
	fmt.Println("acquired:", ok)
	info, _ := c.Do(ctx, "LOCK.INFO", "orders").Result()
	holder := info.(map[any]any)["holders"].([]any)[0].(map[any]any)
	fmt.Println("holder:", holder["owner"], "fenced:", holder["fence"].(int64) > 0)
	n, _ := redis.NewScript(casDelete).Run(ctx, c, []string{"orders"}, "token-1").Int()
	fmt.Println("released:", n)
	// Output:
	// acquired: true
	// holder: token-1 fenced: true
	// released: 1
}
