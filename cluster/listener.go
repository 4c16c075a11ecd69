package cluster

// PeerListenerErr reports whether the node's peer port accepts
// connections: nil when it does, else why not — accepts failing and
// retried (netguard.ErrAcceptFailing, e.g. out of file descriptors), or
// the listener closed underneath (netguard.ErrStopped); see
// transport.Transport.ListenerErr. A Config.Transport that cannot tell
// reports nil. For readiness checks.
func (n *Node) PeerListenerErr() error {
	if l, ok := n.tr.(interface{ ListenerErr() error }); ok {
		return l.ListenerErr()
	}
	return nil
}
