package cluster

// WantKeyspaceEvents makes the entries this node applies from the next
// batch on carry fsm.EvKeyspace events to Subscribe's functions, until
// done is called (once); several callers may want them at once
// (lockservice.KeyspaceDemand).
func (n *Node) WantKeyspaceEvents() (done func()) { return n.keyspace.Want() }
