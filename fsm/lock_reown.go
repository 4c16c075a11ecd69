package fsm

// reown handles OpReown: Owner's hold on Key passes to the owner token
// Args[0]. Everything else about the hold (fence, mode, count, deadline,
// session, lock-delay, hard limit) stays, so a holder can change the
// identity it publishes without a moment in which it does not hold the
// key. The hold's position in the holder list is kept; the session index
// and the memory count follow the new token. Repeating it is harmless.
func (t *lockTable) reown(ctx *applyCtx, cmd *Command) Result {
	if err := t.cfg.checkKey(cmd.Key); err != nil {
		return Result{Err: err}
	}
	if err := t.cfg.checkOwner(cmd.Owner); err != nil {
		return Result{Err: err}
	}
	if len(cmd.Args) != 1 {
		return Result{Err: errf(ErrBadCommand, "reown takes one new owner, got %d", len(cmd.Args))}
	}
	newOwner := string(cmd.Args[0])
	if err := t.cfg.checkOwner(newOwner); err != nil {
		return Result{Err: err}
	}
	v, err := t.lockAt(cmd.Key)
	if err != nil {
		return Result{Err: err}
	}
	l := v.lock()
	i := l.holdIndex(cmd.Owner)
	if i < 0 {
		// A retry of a reown that was applied finds the new token holding:
		// the same answer again, so a caller may repeat it safely.
		if j := l.holdIndex(newOwner); j >= 0 {
			h := l.holder(j)
			return Result{Granted: true, Fence: h.Fence, Deadline: t.holdDeadline(h), Count: int(h.Count)}
		}
		return Result{Err: errf(ErrNotOwner, "%q", cmd.Key)}
	}
	h := l.holder(i)
	if newOwner == cmd.Owner {
		return Result{Granted: true, Fence: h.Fence, Deadline: t.holdDeadline(h), Count: int(h.Count)}
	}
	if l.holdIndex(newOwner) >= 0 {
		return Result{Err: errf(ErrBadCommand, "the new owner already holds %q", cmd.Key)}
	}
	grow := int64(len(newOwner) - len(cmd.Owner))
	if grow > 0 && t.overMemory() {
		return Result{Err: t.errOOM()}
	}
	if s := h.session(); s != "" {
		t.sessDelHold(s, cmd.Key, cmd.Owner)
		t.sessAddHold(s, cmd.Key, newOwner)
	}
	h.Owner = newOwner
	t.mem += grow
	t.touch(ctx, cmd.Key, v)
	// The key's value as GET reads it (the holder's token) was replaced.
	ctx.notify(NotifySet, cmd.Key)
	return Result{Granted: true, Fence: h.Fence, Deadline: t.holdDeadline(h), Count: int(h.Count)}
}
