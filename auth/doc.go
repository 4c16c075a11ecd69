// Package auth is locknode's one model of users and permissions, shared
// by the HTTP API and the RESP bridge.
//
// A users file is a subset of Redis' ACL file syntax, one user a line:
//
//	user NAME on|off [>password | #sha256hex | nopass]... [~keypattern | allkeys]...
//	     [&channelpattern | allchannels | resetchannels]... [+@category | -@category]...
//
// Categories are read, write, admin and all (allcommands = +@all,
// nocommands). Lines starting with '#' and empty lines are skipped. A user
// absent from the file does not exist; in particular, unlike Redis, a
// file without a "user default" line leaves no default user, so "AUTH
// password" fails and unauthenticated clients are refused. A "user
// default on nopass ..." line makes unauthenticated clients that user.
//
// Key patterns are Redis globs and act as namespaces: a user reads, lists
// and changes only keys that match one of its patterns. Channels follow
// the line's &patterns when it has any (Redis' rule); a line without
// channel rules uses its key patterns for channels too.
//
// How to use it:
//
//  1. Build an Audit once per node (NewAudit) and register its
//     Collectors; pass it to every front end, users or not: forced
//     releases and membership changes are audited either way.
//  2. With users configured, build a Store (NewStore) and pass it to the
//     front ends; call Store.Reload on SIGHUP. A nil *Store means
//     authentication is off.
//  3. A front end authenticates each client (Users.Authenticate), keeps
//     the user's name, and looks the user up again (Users.Lookup) in the
//     current set before each request, so a reload that disables a user
//     or narrows its patterns takes effect at the next request. It checks
//     User.Allowed(category, keys...) once per request.
//
// Passwords are kept only as SHA-256 hashes and compared in constant
// time; no error or log line includes one.
package auth
