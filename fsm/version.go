package fsm

import (
	"errors"
	"fmt"
)

// Cluster versions: how replicas running different binaries keep deciding
// alike (docs/DESIGN.md, "Changing replicated behaviour").
//
// The active cluster version is part of the replicated state: it starts at
// 1, an OpSetVersion entry raises it (never lowers it), and snapshots carry
// it. Every later change of the log (an op, a command field), of the
// snapshot, or of what Apply decides for an entry, is gated on it: the new
// form or decision applies only when t.gate(v) holds, so a binary that
// knows version v decides exactly as the older binaries do until v is
// activated, and all replicas agree on every entry whatever they run.
//
// A binary runs the cluster versions MinClusterVersion..MaxClusterVersion
// (version_cur.go; version_next.go under the locknode_next build tag, a
// synthetic next release for the upgrade tests). Meeting an entry or a
// snapshot of a version above MaxClusterVersion, the table stops: that
// Apply and every later one return a *VersionError and change nothing
// (halted), because skipping the entry or guessing at it would let this
// replica diverge from the others.

// ErrNeedVersion is wrapped by every *VersionError: errors.Is(err,
// ErrNeedVersion) tells that this binary is too old for the log or
// snapshot it was given.
var ErrNeedVersion = errors.New("fsm: needs a newer locknode")

// VersionError says what this binary cannot apply and which cluster
// version it needs.
type VersionError struct {
	// What is the entry or snapshot part that is unknown.
	What string
	// Need is the cluster version it needs; 0 when the data does not say
	// (an op or command field unknown to this binary: a newer one than
	// MaxClusterVersion).
	Need uint32
}

func (e *VersionError) Error() string {
	need := fmt.Sprintf("cluster version %d", e.Need)
	if e.Need == 0 {
		need = fmt.Sprintf("a cluster version above %d", MaxClusterVersion)
	}
	return fmt.Sprintf("fsm: %s needs %s; this binary runs cluster versions %d..%d: run a newer locknode",
		e.What, need, MinClusterVersion, MaxClusterVersion)
}

func (e *VersionError) Unwrap() error { return ErrNeedVersion }

// opVersion is the cluster version that introduced each op; 0 = not an
// op of this binary. An op is applied only once its version is active
// (TestEveryOpHasAVersion fails on an op missing here).
var opVersion = [256]uint32{
	OpTick: 1, OpAcquire: 1, OpRelease: 1, OpExtend: 1, OpCancelWait: 1,
	OpSessionOpen: 1, OpSessionKeepAlive: 1, OpSessionClose: 1, OpFenceCheck: 1,
	OpRedis: 1, OpEval: 1, OpExec: 1, OpScriptLoad: 1, OpEvalSHA: 1, OpScriptFlush: 1,
	OpReown: 1, OpSetVersion: 1,
}

// OpVersion returns the cluster version that introduced op, and false
// for an op this binary does not know. A proposer uses an op only when
// the active version is at least this.
func OpVersion(op Op) (uint32, bool) {
	v := opVersion[op]
	return v, v != 0
}

// fieldVersion is the cluster version that introduced each command field
// (a bit of the encoding's presence mask), in bit order
// (TestEveryFieldHasAVersion fails on a field missing here).
var fieldVersion = [...]uint32{
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, // fTime .. fLockDelay
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, // fMaxHold .. fMeta
}

// maxFieldVersion is the highest of fieldVersion: while it is active,
// Apply need not look at a command's fields.
var maxFieldVersion = func() uint32 {
	m := uint32(0)
	for _, v := range fieldVersion {
		m = max(m, v)
	}
	return m
}()

// Version returns the active cluster version.
func (t *keySpace) Version() uint32 { return max(t.version, 1) }

// gate reports whether cluster version v is active: the test every new
// form or decision of the FSM is written under.
func (t *keySpace) gate(v uint32) bool { return t.Version() >= v }

// Halted returns the error that stopped the table (an entry or snapshot
// this binary cannot apply), or nil.
func (t *Table) Halted() error { return t.halted }

// checkVersion decides, before cmd changes anything, whether this table
// can apply it: an op or field unknown to this binary, or an activation
// of a version above MaxClusterVersion, halts the table (a *VersionError);
// an op or field this binary knows but whose version is not active yet
// is refused, the same way on every node that knows it (a node that does
// not know it halts instead: a proposer never sends it before the
// version is active, see OpVersion).
func (t *Table) checkVersion(cmd *Command) (halt, refuse error) {
	v, ok := OpVersion(cmd.Op)
	if cmd.Op == OpInvalid {
		return nil, errf(ErrBadCommand, "op 0")
	}
	if !ok {
		return &VersionError{What: fmt.Sprintf("log entry op %d", cmd.Op)}, nil
	}
	if cmd.Op == OpSetVersion && cmd.Token > MaxClusterVersion {
		return &VersionError{What: "the entry activating cluster version " + fmt.Sprint(cmd.Token), Need: uint32(min(cmd.Token, 1<<32-1))}, nil
	}
	if !t.gate(v) {
		return nil, errf(ErrBadCommand, "op %d needs cluster version %d (active: %d)", cmd.Op, v, t.Version())
	}
	if !t.gate(maxFieldVersion) {
		mask := cmd.mask()
		for i, fv := range fieldVersion {
			if mask&(1<<i) != 0 && !t.gate(fv) {
				return nil, errf(ErrBadCommand, "command field %d needs cluster version %d (active: %d)", i, fv, t.Version())
			}
		}
	}
	return nil, nil
}

// setVersion applies OpSetVersion: cmd.Token becomes the active version
// if it is higher (checkVersion made sure this binary runs it). A lower
// or equal one changes nothing: a version is never lowered, and two
// leaders proposing the same activation are harmless. Count is the
// active version after the entry.
func (t *Table) setVersion(cmd *Command) Result {
	if v := uint32(cmd.Token); v > t.Version() {
		t.version = v
	}
	return Result{Count: int(t.Version())}
}
