package redisbridge

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Spring's lock registry sends its scripts inside MULTI: they are queued
// and run by EXEC's one FSM command, atomically with the rest.
func TestEvalInsideMulti(t *testing.T) {
	s, _ := testServer(t, Config{})
	ctx := context.Background()
	c := goRedis(t, s, 3)
	if err := c.SetNX(ctx, "lock", "tok", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	var del, get *redis.Cmd
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Eval(ctx, `return redis.call("get", KEYS[1])`, []string{"lock"})
		del = p.Eval(ctx, casDelete, []string{"lock"}, "tok")
		return nil
	})
	if err != nil {
		t.Fatalf("EXEC: %v", err)
	}
	if v, err := get.Text(); err != nil || v != "tok" {
		t.Fatalf("get in tx = %q, %v", v, err)
	}
	if n, err := del.Int(); err != nil || n != 1 {
		t.Fatalf("delete in tx = %d, %v", n, err)
	}
	if n, _ := c.Exists(ctx, "lock").Result(); n != 0 {
		t.Fatal("lock still there after the transaction")
	}
}
