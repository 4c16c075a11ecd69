package fsm

// Future is a proposed command's pending Result: what an asynchronous
// apply (cluster.Node.ApplyAsync) returns and what a caller that
// group-commits (the RESP bridge's pipeline) holds. It lives here, next to
// Result, so that the node and its consumers name one type without
// importing each other.
type Future interface {
	// Done is closed once Result will not block on the log. It may stay
	// open forever for a proposal abandoned at shutdown; Result returns
	// then all the same.
	Done() <-chan struct{}
	// Result waits for the outcome, as a synchronous Apply returns it.
	Result() (Result, error)
}
