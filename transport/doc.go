// Package transport carries a node's network traffic: Raft's own RPCs and
// the cluster's request forwarding share one TCP port.
//
// # Connections
//
// The first byte of every new connection says what it carries (as in
// Consul): 0x01 is raft, handed to the raft.StreamLayer returned by
// RaftStreamLayer (give it to raft.NewNetworkTransport); 0x02 is RPC,
// served by the Handler installed with Serve; 0x03 is raft in the lean
// framing (raftwire.go), handed to LeanRaftStreamLayer for a LeanRaft.
// Any other byte closes the connection. With TLS configured, the
// handshake comes first and the type byte travels inside TLS, so one
// listener serves every kind under TLS and a peer that fails the
// handshake never gets a byte read. RPC handlers
// find the verified peer certificate with PeerCertificate.
//
// # Lean raft framing
//
// LeanRaft carries raft's AppendEntries, votes and TimeoutNow in a binary
// framing of its own (no msgpack, no reflection, buffers reused, a batch
// of entries decoded into one allocation). It implements those methods of
// raft.Transport; a raft.Transport of the caller's embeds it beside
// raft's NetworkTransport, which keeps InstallSnapshot and any
// AppendEntries longer than MaxRaftFrame (ErrTooLarge). A release that
// does not know the framing closes its connections, so the caller
// decides when every peer understands it (the cluster package: cluster
// version 3).
//
// # RPC
//
// Call is a request/response call with opaque byte payloads. Frames are
// length-prefixed (4 bytes, big-endian) and carry a request id; bodies are
// bounded by MaxFrameSize. Concurrent calls to one peer are pipelined over at
// most MaxConnsPerPeer pooled connections; each request runs its handler in
// its own goroutine on the server, so a slow request does not hold up the
// others. Frames queued while a write is in progress go out together in one
// write.
//
// Failure is reported fast: when a connection breaks, every call in flight on
// it fails at once with an error wrapping ErrConnLost (its request may or
// may not have run). A peer whose process dies is noticed through the RST
// its kernel sends; a peer whose host vanishes, through TCP keepalive or the
// call's deadline.
//
// A mistyped address fails fast too: every RPC connection opens with a
// cancel frame that a peer ignores and a line-based server (HTTP, Redis)
// answers at once, and an answer no frame can start with fails the calls
// with a *NotPeerError (errors.Is ErrNotPeer) that names the service, so
// "that is an HTTP port" replaces a stream of bad frames.
//
// # Your responsibilities
//
//  1. Create the Transport with New before raft, and give RaftStreamLayer to
//     raft.NewNetworkTransport. Its advertised Addr is the raft address.
//  2. Call Serve once the node can answer requests; requests arriving before
//     then wait for it until their caller gives up.
//  3. Handlers must return once their ctx is cancelled: Close waits for them.
//  4. Treat an error wrapping ErrConnLost as "outcome unknown" and make the
//     retried request idempotent (or look the outcome up) before retrying.
//  5. Close the Transport after raft has shut down.
//
// # Testing seams
//
// Config.Listener and Config.Dial let a test harness wrap every connection
// (to drop, delay or partition traffic); Config.ServerTLS and
// Config.ClientTLS enable (mutual) TLS.
package transport
