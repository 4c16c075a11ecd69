package client

import "net/http"

// LocalWaiters returns how many goroutines wait locally for key in
// coalesced Lock calls (any options).
func (c *Client) LocalWaiters(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, co := range c.coalesced {
		if k.key == key {
			n += len(co.queue)
		}
	}
	return n
}

// CheckEveryReuse makes a transport from NewTransport look at every
// pooled connection before reusing it, however briefly it was idle.
func CheckEveryReuse(rt http.RoundTripper) {
	rt.(*h1Transport).staleAfter = 0
}
