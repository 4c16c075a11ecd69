package cluster

// Change events on demand. A renewal (a lock extend, a Redis PEXPIRE or
// renewal script in an OpBatchRenew entry) changes its key's lease, and
// the table reports that as an fsm.EvChanged or fsm.EvValueChanged event:
// one allocated event per renewal on every node, the largest allocation of
// holding many locks. Only a few things read them: the key watches
// (blocking queries, the Go client's Watch), the Redis bridge's
// client-side caching and the external Redis mirror. While none of them
// on this node wants them, the node applies batches of renewals without
// those events (fsm.Table.SkipRenewalChanges). The setting is this node's
// alone: every replica changes its table alike either way.
//
// The demand is read once per applied batch, under the table's lock, so a
// consumer that starts wanting the events (its function reports true)
// gets them from every batch that takes the lock after that: what it then
// reads of the table already holds the batches before. The key watches
// are told of a batch applied without them (lockservice.Hub.ChangesSkipped)
// and count it as a change of every key, so no index is left behind.

// AddChangeDemand registers fn, asked before each applied batch whether
// something outside the cluster package reads the change events of
// renewals (fsm.EvChanged, fsm.EvValueChanged through Subscribe): while
// none reports true, a batch's renewals emit none. fn must report true
// before its owner relies on them, and be cheap and never block (it runs
// on the apply path, under the table's lock). The returned function
// removes it.
func (n *raftReplica) AddChangeDemand(fn func() bool) (remove func()) {
	return n.changes.add(fn)
}

// wantsChanges reports whether the batch about to be applied must carry
// its renewals' change events.
func (n *raftReplica) wantsChanges() bool {
	return n.hub.WantsChanges() || n.changes.any()
}
