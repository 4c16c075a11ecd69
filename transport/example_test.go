package transport_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/locknode/locknode/transport"
)

// Two nodes: one serves requests, the other calls it. In a real node the
// same Transport also carries raft, through RaftStreamLayer.
func Example() {
	server, err := transport.New(transport.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	defer server.Close()
	server.Serve(func(ctx context.Context, req []byte) ([]byte, error) {
		if len(req) == 0 {
			return nil, fmt.Errorf("empty request")
		}
		return []byte(strings.ToUpper(string(req))), nil
	})

	client, err := transport.New(transport.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	resp, err := client.Call(context.Background(), server.Addr().String(), []byte("acquire"))
	fmt.Println(string(resp), err)

	_, err = client.Call(context.Background(), server.Addr().String(), nil)
	fmt.Println(err)
	// Output:
	// ACQUIRE <nil>
	// transport: remote error: empty request
}
