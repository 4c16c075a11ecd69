package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
	"github.com/locknode/locknode/httpapi"
	"github.com/locknode/locknode/httpapi/httpapitest"
)

func Example() {
	// A stand-in node; in production: the HTTP addresses of your nodes.
	node := httptest.NewServer(httpapi.New(httpapitest.NewFake(), httpapi.Config{}))
	defer node.Close()

	c, err := client.New(client.Config{Endpoints: []string{node.URL}})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	l, err := c.Lock(ctx, "reports/nightly", client.WithTTL(10*time.Second), client.WithWait(time.Minute))
	if err != nil {
		panic(err)
	}
	// Work under l.Context(): it ends before the lease could be lost.
	// Hand l.Fence() to whatever the lock protects.
	fmt.Println("held:", l.State(), l.Context().Err() == nil)

	_, err = c.TryLock(ctx, "reports/nightly")
	fmt.Println("second try:", errors.Is(err, api.ErrLocked))

	if err := l.Unlock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("after unlock:", l.State())
	// Output:
	// held: held true
	// second try: true
	// after unlock: released
}

func ExampleClient_Watch() {
	node := httptest.NewServer(httpapi.New(httpapitest.NewFake(), httpapi.Config{}))
	defer node.Close()
	c, err := client.New(client.Config{Endpoints: []string{node.URL}})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // ends the watch (before node.Close: defers run last first)

	// A standby watches the lock it does not hold.
	states, err := c.Watch(ctx, "reports/nightly")
	if err != nil {
		panic(err)
	}
	fmt.Println("now:", (<-states).State)

	l, err := c.TryLock(ctx, "reports/nightly")
	if err != nil {
		panic(err)
	}
	fmt.Println("then:", (<-states).State)
	if err := l.Unlock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("then:", (<-states).State)
	// Output:
	// now: free
	// then: held
	// then: free
}
