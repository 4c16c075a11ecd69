package httpapi

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/wire"
)

// Users and permissions. With Config.Users set, every request
// authenticates with HTTP Basic credentials (401 without or with wrong
// ones, unless the users file has "user default on nopass"), its route
// needs a category (routeCategories; 403 without it), and handlers check
// the keys a request names (403 outside the user's key patterns).

// routeCategories is what each route needs, by its mux pattern. A route
// missing here needs admin, so a new route cannot be open by accident;
// TestRoutePermissions walks the routes.
var routeCategories = map[string]auth.Category{
	"POST " + wire.PathAcquire:                       auth.Write,
	"POST " + wire.PathTry:                           auth.Write,
	"POST " + wire.PathRelease:                       auth.Write, // "force": admin, checked by the handler
	"POST " + wire.PathExtend:                        auth.Write,
	"GET " + wire.PathLocks:                          auth.Read,
	"GET " + wire.PathLockPrefix + "{key...}":        auth.Read,
	"POST " + wire.PathSessions:                      auth.Write,
	"PUT " + wire.PathSessions + "/{id}/keepalive":   auth.Write,
	"POST " + wire.PathSessions + "/{id}/keepalive":  auth.Write,
	"DELETE " + wire.PathSessions + "/{id}":          auth.Write,
	"POST " + wire.PathElections + "{name}/campaign": auth.Write,
	"POST " + wire.PathElections + "{name}/resign":   auth.Write,
	"POST " + wire.PathElections + "{name}/proclaim": auth.Write,
	"GET " + wire.PathElections + "{name}/observe":   auth.Read,
	"POST " + wire.PathFenceCheck:                    auth.Write,
	"GET " + wire.PathStatus:                         auth.Read,
	"POST " + wire.PathMembers:                       auth.Admin,
	"DELETE " + wire.PathMembers + "/{id}":           auth.Admin,
	"POST " + wire.PathTransferLeader:                auth.Admin,
	"GET " + wire.PathSnapshot:                       auth.Admin,
	"POST " + wire.PathClusterUpgrade:                auth.Admin,
	"GET " + wire.PathMetrics:                        auth.Read,
	"/":                                              0, // the JSON 404

	// The dashboard's data (dashboard.go); its page is public.
	"GET " + wire.PathLockPrefix + "{key}" + wire.PathHistory: auth.Read,
	"GET " + wire.PathActivity:                                auth.Read,
	"GET " + wire.PathClusterView:                             auth.Read,
	"GET " + wire.PathLocksByAge:                              auth.Read,
	"GET " + wire.PathUILocks:                                 auth.Read,
	"POST " + wire.PathForceRelease:                           auth.Admin,
}

type userKey struct{}

// userOf returns the request's user (nil when users are off).
func userOf(r *http.Request) *auth.User {
	u, _ := r.Context().Value(userKey{}).(*auth.User)
	return u
}

// userName is the request's user name for the audit log ("" when users
// are off).
func userName(r *http.Request) string {
	if u := userOf(r); u != nil {
		return u.Name
	}
	return ""
}

// authenticate checks the request's credentials and its route's
// category. On success it returns the request carrying its user; on
// failure it has answered 401 or 403.
func (rt *router) authenticate(w http.ResponseWriter, r *http.Request, pattern string) (*http.Request, bool) {
	s := rt.s
	us := s.cfg.Users.Users()
	var u *auth.User
	if name, pass, ok := r.BasicAuth(); ok {
		if name == "" {
			name = auth.DefaultUser // as RESP's AUTH password
		}
		var err error
		if u, err = us.Authenticate(name, pass); err != nil {
			s.cfg.Audit.Failure("http", auth.ReasonCredentials)
			s.throttleFailure(w, r, us.LogName(name))
			challenge(w, r)
			s.fail(w, r, fmt.Errorf("%w: %w", api.ErrUnauthorized, err))
			return nil, false
		}
		if cs := connStateOf(r); cs != nil && cs.authFails.Load() > 0 {
			cs.authFails.Store(0)
		}
		s.cfg.AuthThrottle.Succeeded(remoteAddr(r))
	} else if u = us.Anonymous(); u == nil {
		s.cfg.Audit.Failure("http", auth.ReasonCredentials)
		challenge(w, r)
		s.fail(w, r, fmt.Errorf("%w: no credentials (HTTP Basic)", api.ErrUnauthorized))
		return nil, false
	}
	cat, known := routeCategories[pattern]
	if !known {
		cat = auth.Admin
	}
	if cat != 0 && !u.Can(cat) {
		s.cfg.Audit.Failure("http", auth.ReasonPermission)
		s.fail(w, r, fmt.Errorf("%w: user %q lacks +@%s for %s", api.ErrForbidden, u.Name, cat, pattern))
		return nil, false
	}
	return r.WithContext(context.WithValue(r.Context(), userKey{}, u)), true
}

// throttleFailure counts a wrong Basic credential on the request's
// connection and source address (auth.Throttle) and waits the delay it
// asks before the 401 goes out: in the request's own goroutine, holding
// nothing; the client leaving ends the wait. Past the disconnect count the
// answer closes the connection.
func (s *server) throttleFailure(w http.ResponseWriter, r *http.Request, user string) {
	n := 1
	if cs := connStateOf(r); cs != nil {
		n = int(cs.authFails.Add(1))
	}
	v := s.cfg.AuthThrottle.Failed("http", user, remoteAddr(r), n)
	if v.Disconnect {
		w.Header().Set("Connection", "close")
	}
	auth.Wait(r.Context(), v.Delay)
}

// remoteAddr is r's client address as a net.Addr.
func remoteAddr(r *http.Request) net.Addr {
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return net.TCPAddrFromAddrPort(ap)
	}
	return strAddr(r.RemoteAddr)
}

// strAddr is a net.Addr known only by its text.
type strAddr string

func (a strAddr) Network() string { return "tcp" }
func (a strAddr) String() string  { return string(a) }

// challenge asks for Basic credentials on a 401, except from the
// dashboard's page (wire.HeaderUI), which shows its own login form: the
// browser's prompt would pop up on every poll.
func challenge(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(wire.HeaderUI) == "" {
		w.Header().Set("WWW-Authenticate", `Basic realm="locknode"`)
	}
}

// allowKeys answers 403 and returns false unless the request's user may
// use every key with category cat (always true when users are off).
func (s *server) allowKeys(w http.ResponseWriter, r *http.Request, cat auth.Category, keys ...string) bool {
	u := userOf(r)
	if u == nil {
		return true
	}
	if !u.Can(cat) {
		s.cfg.Audit.Failure("http", auth.ReasonPermission)
		s.fail(w, r, fmt.Errorf("%w: user %q lacks +@%s", api.ErrForbidden, u.Name, cat))
		return false
	}
	for _, k := range keys {
		if !u.Key(k) {
			s.cfg.Audit.Failure("http", auth.ReasonPermission)
			s.fail(w, r, fmt.Errorf("%w: key %q is outside user %q's key patterns", api.ErrForbidden, k, u.Name))
			return false
		}
	}
	return true
}

// keysOf is a request's key or keys.
func keysOf(key string, keys []string) []string {
	if key != "" {
		return []string{key}
	}
	return keys
}

// visible keeps the locks the request's user may see.
func visible(r *http.Request, locks []api.LockInfo) []api.LockInfo {
	u := userOf(r)
	if u == nil || u.AllKeys() {
		return locks
	}
	out := locks[:0]
	for _, l := range locks {
		if u.Key(l.Key) {
			out = append(out, l)
		}
	}
	return out
}
