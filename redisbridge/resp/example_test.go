package resp_test

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/locknode/locknode/fsm/reply"
	"github.com/locknode/locknode/redisbridge/resp"
)

// A server loop: parse pipelined commands (multibulk and inline), answer
// each, flush once the input is drained.
func Example() {
	in := "*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n"
	var out bytes.Buffer
	r := resp.NewReader(strings.NewReader(in), resp.Config{})
	w := resp.NewWriter(&out, 0)
	w.Proto = 3
	for {
		args, err := r.ReadCommand()
		if err != nil {
			break
		}
		switch strings.ToUpper(string(args[0])) {
		case "GET":
			w.WriteReply(reply.Null)
		case "PING":
			w.WriteReply(reply.NewStatus("PONG"))
		}
		if r.Buffered() == 0 {
			w.Flush()
		}
	}
	w.Flush()
	fmt.Printf("%q\n", out.String())
	// Output: "_\r\n+PONG\r\n"
}
