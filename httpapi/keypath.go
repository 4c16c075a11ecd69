package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/wire"
)

// Keys in paths. GET /v1/locks/{key} (inspect) and GET
// /v1/locks/{key}/history take the key as the whole rest of the path,
// percent-decoded, so a key may hold slashes:
//
//   - A key's "/" may be sent as %2F (always unambiguous; the Go client
//     escapes every key as one path segment) or raw.
//   - A path whose last raw segment is "history", with a key before it,
//     asks that key's history. To inspect a key whose last segment is
//     "history" ("a/history"), escape the slash before it: a%2Fhistory.
//   - Raw segments that are empty, "." or ".." are refused (400): clients
//     and proxies normalise such paths, and the key would silently become
//     another. Escape the slashes around them (a%2F%2Fb, a%2F..%2Fb) or
//     the dots (%2E).
//   - "%" in a key is sent as %25, as in any URL.
//
// docs/http-api.md documents these rules; TestKeysInPaths checks them.

// Patterns of the two routes that carry a key in their path.
const (
	lockKeyPattern     = "GET " + wire.PathLockPrefix + "{key...}"
	lockHistoryPattern = "GET " + wire.PathLockPrefix + "{key}" + wire.PathHistory
)

// lockGet serves both key routes: the mux sends a single-segment key with
// /history to the history pattern and everything else under
// /v1/locks/ to {key...}; lockPathKey decides for raw slashes too.
func (s *server) lockGet(w http.ResponseWriter, r *http.Request) {
	key, history, err := lockPathKey(r.URL.EscapedPath())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if history {
		s.history(w, r, key)
		return
	}
	s.inspect(w, r, key)
}

// lockPathKey returns the key of an escaped path under wire.PathLockPrefix
// and whether the path asks the key's history.
func lockPathKey(escaped string) (key string, history bool, err error) {
	rest := strings.TrimPrefix(escaped, wire.PathLockPrefix)
	if i := strings.LastIndexByte(rest, '/'); i > 0 {
		// Each raw segment is decoded on its own, as the mux matches them,
		// so "/%68istory" is "/history" too.
		if last, err := url.PathUnescape(rest[i+1:]); err == nil && last == wire.PathHistory[1:] {
			rest, history = rest[:i], true
		}
	}
	key, err = url.PathUnescape(rest)
	if err != nil {
		return "", false, fmt.Errorf("%w: the key in path %q is not validly escaped: %v", api.ErrBadRequest, escaped, err)
	}
	return key, history, nil
}

// checkLockPath refuses a path under wire.PathLockPrefix with a raw segment
// that is empty, "." or "..": a client, a proxy or the mux would clean
// it into another path, so its key would become another key.
func checkLockPath(escaped string) error {
	rest, ok := strings.CutPrefix(escaped, wire.PathLockPrefix)
	if !ok || rest == "" {
		return nil
	}
	for seg := range strings.SplitSeq(rest, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%w: path %q has an empty, \".\" or \"..\" segment, which HTTP clients and proxies rewrite; escape the key's slashes as %%2F (docs/http-api.md, keys in paths)", api.ErrBadRequest, escaped)
		}
	}
	return nil
}

// pattern returns the route pattern that serves r, as the mux chooses
// it but telling a history request of a key with slashes from an
// inspect; "/" when no route matches.
func (rt *router) pattern(r *http.Request) string {
	_, p := rt.mux.Handler(r)
	if p == lockKeyPattern {
		if _, history, err := lockPathKey(r.URL.EscapedPath()); err == nil && history {
			p = lockHistoryPattern
		}
	}
	return p
}
