package redisbridge

import (
	"context"
	"errors"
	"strings"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/internal/apierr"
)

// Wire texts. Clients match several of them by prefix (NOAUTH, WRONGPASS,
// NOSCRIPT, TRYAGAIN, EXECABORT, "ERR unknown command"), so they are
// Redis' own words where Redis has them.
const (
	msgNoAuth        = "NOAUTH Authentication required."
	msgWrongPass     = "WRONGPASS invalid username-password pair or user is disabled."
	msgAuthNoPass    = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	msgHelloNoAuth   = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	msgNoProto       = "NOPROTO unsupported protocol version"
	msgProtoNotInt   = "ERR Protocol version is not an integer or out of range"
	msgSyntax        = "ERR syntax error"
	msgNotInt        = "ERR value is not an integer or out of range"
	msgTimeoutNotInt = "ERR timeout is not an integer or out of range"
	msgTimeoutNeg    = "ERR timeout is negative"
	msgDBRange       = "ERR DB index is out of range"
	msgBadClientName = "ERR Client names cannot contain spaces, newlines or special characters."
	msgNoCluster     = "ERR This instance has cluster support disabled"
	msgNoScript      = "NOSCRIPT No matching script. Please use EVAL."
	msgFlushMode     = "ERR SCRIPT FLUSH only support SYNC|ASYNC option"
	msgNumKeysNotInt = "ERR value is not an integer or out of range"
	msgNumKeysNeg    = "ERR Number of keys can't be negative"
	msgNumKeysBig    = "ERR Number of keys can't be greater than number of args"
	msgMultiNested   = "ERR MULTI calls can not be nested"
	msgExecNoMulti   = "ERR EXEC without MULTI"
	msgDiscardNoMult = "ERR DISCARD without MULTI"
	msgWatchInMulti  = "ERR WATCH inside MULTI is not allowed"
	msgExecAbort     = "EXECABORT Transaction discarded because of previous errors."
	msgMultiTooBig   = "ERR a MULTI block holds at most %d commands (--max-multi-commands) and %d bytes (--max-multi-bytes)"
	msgMaxClients    = "ERR max number of clients reached"
	// msgMaxClientsAddr refuses a connection over MaxConnsPerAddr.
	msgMaxClientsAddr = "ERR max number of clients from one address reached"

	// locknode's own: no leader, and the typed lock API's outcomes.
	msgNoLeader    = "TRYAGAIN no leader reachable, retry later"
	msgTimeout     = "TRYAGAIN request timed out, retry later"
	msgShutdown    = "TRYAGAIN server shutting down, retry on another node"
	msgLocked      = "LOCKED held by another owner"
	msgNotOwner    = "NOTOWNER not the owner of this lock"
	msgNotHeld     = "NOTHELD the lock is not held"
	msgNotFound    = "NOTFOUND no such lock"
	msgWaitTimeout = "TIMEOUT wait timed out"
	msgCancelled   = "CANCELLED wait cancelled"
	msgSession     = "NOSESSION session unknown or expired"
	msgStaleFence  = "STALEFENCE fence token older than the highest seen"
	msgConflict    = "CONFLICT conflicting lock parameters"
	msgLimit       = "LIMIT over a limit"
	msgLockDelay   = "LOCKDELAY key in lock-delay"
	msgMaxHold     = "MAXHOLD max hold time reached"
	msgBadRequest  = "ERR bad request"
	msgWrongType   = "WRONGTYPE Operation against a key holding the wrong kind of value"
	msgOOM         = fsm.OOMText // Redis' own words, without detail

	// CONFIG SET's refusal of a bad notify-keyspace-events letter.
	msgNotifyFlags = "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
)

// errorTexts maps the errors a Backend returns to wire text; the first
// match wins. The key space's refusals are read through the api errors
// they map to (internal/apierr, the table the lock service uses too),
// so each has one wire text, whichever path it came by. Refusals keep
// their detail after the fixed prefix.
var errorTexts = []struct {
	err  error
	text string
}{
	{api.ErrNoLeader, msgNoLeader},
	// Redis' own refusal of a key of another type, before the api's
	// conflict it maps to.
	{fsm.ErrWrongType, msgWrongType},
	{api.ErrLocked, msgLocked},
	{api.ErrNotOwner, msgNotOwner},
	{api.ErrNotHeld, msgNotHeld},
	{api.ErrNotFound, msgNotFound},
	{api.ErrWaitTimeout, msgWaitTimeout},
	{api.ErrCancelled, msgCancelled},
	{api.ErrSessionExpired, msgSession},
	{api.ErrStaleFence, msgStaleFence},
	{api.ErrConflict, msgConflict},
	{api.ErrLimit, msgLimit},
	{api.ErrMaxHold, msgMaxHold},
	{api.ErrLockDelay, msgLockDelay},
	{api.ErrBadRequest, msgBadRequest},
	{api.ErrOutOfMemory, msgOOM},
}

// errorText renders err as one error line. Unknown errors become "ERR"
// with their text; a deadline or shutdown asks the client to retry.
func errorText(err error) string {
	err = apierr.FromFSM(err)
	for _, e := range errorTexts {
		if errors.Is(err, e.err) {
			if e.text == msgWrongType || e.text == msgOOM {
				return e.text
			}
			var nle *api.NoLeaderError
			if e.text == msgNoLeader && !errors.As(err, &nle) {
				return e.text // the rest is how the retries went
			}
			return e.text + detail(err)
		}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return msgTimeout
	case errors.Is(err, context.Canceled), errors.Is(err, errClosed):
		return msgShutdown
	}
	return "ERR " + api.ClientText(err)
}

// detail returns " (<context>)" when err carries more than its
// sentinels' own texts, so the reply says which key or limit.
func detail(err error) string {
	full := err.Error()
	strip := func(sentinel error) {
		if errors.Is(err, sentinel) {
			full = strings.ReplaceAll(full, sentinel.Error(), "")
		}
	}
	for _, e := range errorTexts {
		strip(e.err)
	}
	for code := uint8(1); fsm.ErrorOfCode(code) != nil; code++ {
		strip(fsm.ErrorOfCode(code))
	}
	full = api.CleanText(strings.Trim(full, ": "))
	for strings.Contains(full, ": : ") {
		full = strings.ReplaceAll(full, ": : ", ": ")
	}
	if full == "" {
		return ""
	}
	return " (" + full + ")"
}

// writeErr writes err as an error reply. A wait cut short by Close says
// so (the client should retry elsewhere).
func (c *conn) writeErr(err error) {
	if c.s.baseCtx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, api.ErrCancelled)) {
		c.w.WriteError(msgShutdown)
		return
	}
	c.w.WriteError(errorText(err))
}

// unknownCommand is Redis' text, including the argument preview that
// Redisson and ioredis match on ("ERR unknown command").
func unknownCommand(args [][]byte) string {
	var b strings.Builder
	b.WriteString("ERR unknown command '")
	b.Write(clip(args[0]))
	b.WriteString("', with args beginning with: ")
	for i, a := range args[1:] {
		if i >= 16 { // Redis shows at most the first 128 bytes of args
			break
		}
		b.WriteByte('\'')
		b.Write(clip(a))
		b.WriteString("' ")
	}
	return b.String()
}

func clip(b []byte) []byte {
	if len(b) > 128 {
		return b[:128]
	}
	return b
}

func errArity(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

func unknownSubcommand(sub []byte, cmd string) string {
	return "ERR unknown subcommand '" + string(clip(sub)) + "'. Try " + strings.ToUpper(cmd) + " HELP."
}
