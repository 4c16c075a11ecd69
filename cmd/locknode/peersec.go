package main

import (
	"errors"
	"fmt"
)

// The peer port trusts whoever completes its handshake: without mutual
// TLS, anyone who reaches it can force-release any lock, change the
// voters and forge raft entries (a clock stamped hours ahead, a term that
// makes it leader). So serve refuses to open it beyond loopback without
// peer TLS unless told so in as many words, as CockroachDB does with
// --insecure.

// errInsecurePeer refuses a start whose peer port would be open.
var errInsecurePeer = errors.New("peer port without TLS")

// insecurePeerUsage is --insecure-peer's help line.
const insecurePeerUsage = "run the peer (raft) port without TLS although it listens beyond loopback or --users is set: " +
	"whoever reaches it can act as a member (force-release any lock, change the voters, forge raft entries); " +
	"only on a network where nothing else reaches the port"

// peerSecurity decides whether a node may start with its peer port
// listening on bind. peerTLS: --peer-tls-* are given; users: --users is;
// insecure: --insecure-peer is. A refusal says what to do; warn, when not
// empty, is logged at WARN once the node starts.
func peerSecurity(bind string, peerTLS, users, insecure bool) (warn string, err error) {
	if peerTLS {
		return "", nil
	}
	const fix = "give --peer-tls-cert, --peer-tls-key and --peer-tls-ca (mutual TLS between the nodes), " +
		"or --insecure-peer (LOCKNODE_INSECURE_PEER=true) to run it open on a network you trust"
	beyond := beyondLoopback(bind)
	switch {
	case insecure && beyond:
		return "--insecure-peer: the peer port listens beyond loopback without TLS; whoever reaches it can act as a member " +
			"(force-release any lock, change the voters, forge raft entries)", nil
	case insecure:
		return "--insecure-peer: the peer port has no TLS; any process on this host can act as a member", nil
	case beyond:
		return "", fmt.Errorf("%w: --raft-addr %s listens beyond loopback, so whoever reaches it could act as a member "+
			"(force-release any lock, change the voters, forge raft entries); %s", errInsecurePeer, bind, fix)
	case users:
		return "", fmt.Errorf("%w: --users protects the HTTP and RESP ports, but not the peer port (--raft-addr %s), "+
			"through which any local process could act as a member; %s", errInsecurePeer, bind, fix)
	}
	return "the peer port has no TLS: any process on this host can act as a member " +
		"(force-release any lock, change the voters); give --peer-tls-* to close it", nil
}
