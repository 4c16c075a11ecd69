// Package httpapi serves the typed lock API (api.Locker) as HTTP/JSON on
// each node. Any api.Locker works: cluster.Node in production, an
// in-memory fake (package httpapitest) in tests.
//
//	cfg := httpapi.Config{Logger: log, Metrics: promhttp.Handler()}
//	srv := httpapi.NewServer(httpapi.New(node, cfg), cfg) // header, idle, header-size limits
//	err := srv.Serve(httpapi.LimitListener(ln, cfg))       // connection cap
//
// Set no WriteTimeout below api.MaxWait on such a server: acquire
// long-polls.
//
// # Routes
//
// Paths, the request types that are not api types (SessionRequest,
// CampaignRequest, ...) and the errors of the HTTP layer (ErrBodyTooLarge,
// ...) are in package wire, shared with the client. Bodies are JSON (api
// types unless noted); durations are integer milliseconds. Every non-2xx
// answer is an api.ErrorBody. The reference
// for clients is the OpenAPI 3.1 document openapi.json, served at
// GET /v1/openapi.json and generated from these types by
// internal/openapigen (go generate); its tests fail when a route served
// (Routes) is missing from it or a real answer does not match it.
//
//	Method      Path                              Body -> answer                    Locker call
//	POST        /v1/locks/acquire                 AcquireRequest -> Lease           Acquire (blocks up to wait_ms)
//	POST        /v1/locks/try                     AcquireRequest -> Lease           TryAcquire (never blocks)
//	POST        /v1/locks/release                 ReleaseRequest -> ReleaseResult   Release
//	POST        /v1/locks/extend                  ExtendRequest -> Lease            Extend
//	GET         /v1/locks/{key...}[?stale=true]   -> LockInfo                       Inspect
//	GET         /v1/locks?prefix=&after=&limit=[&stale=true] -> ListResult          List
//	POST        /v1/sessions                      SessionRequest -> SessionInfo     OpenSession
//	PUT, POST   /v1/sessions/{id}/keepalive       -> SessionInfo                    KeepAlive
//	DELETE      /v1/sessions/{id}                 -> 204                            CloseSession
//	POST        /v1/elections/{name}/campaign     CampaignRequest -> Leader         Campaign (blocks)
//	POST        /v1/elections/{name}/resign       ResignRequest -> 204              Resign
//	POST        /v1/elections/{name}/proclaim     ProclaimRequest -> Leader         Proclaim
//	GET         /v1/elections/{name}/observe      -> stream of Leader, one per line Observe
//	POST        /v1/fence/check                   FenceCheckRequest -> FenceResult  FenceCheck
//	GET         /v1/status                        -> Status                         Status (+ Config.Extra)
//	POST        /v1/members                       MemberRequest -> 204              AddVoter    (if Membership; AddVoterForce with force)
//	DELETE      /v1/members/{id}                  -> 204                            RemoveServer (if Membership)
//	POST        /v1/cluster/upgrade               -> api.UpgradeResult              Upgrade (if Upgrader; admin)
//	GET         /metrics                          Prometheus text                   Config.Metrics, if set
//	GET         /v1/locks/{key}/history           -> api.History                    HistoryReader, if the Locker is one
//	GET         /v1/ui/activity                   -> api.Activity                   ActivityReader, if the Locker is one
//	GET         /v1/ui/cluster                    -> api.ClusterView                Status, and each member's (PeerLister)
//	GET         /v1/ui/locks                      -> api.LockPage                   List, filtered and totalled (PathUILocks)
//	GET         /v1/ui/locks-by-age               -> api.AgeList                    List, held locks by age
//	GET         /v1/snapshot                      snapshot stream                   WriteSnapshot (if Snapshotter; admin)
//	GET         /livez, /readyz                   text, public                      Config.Ready, else Status
//	GET         /v1/openapi.json                  the OpenAPI document, public
//	POST        /v1/ui/force-release              api.ForceReleaseRequest -> ReleaseResult  Release with Force (admin, audited with the reason)
//	GET         /ui/                              the dashboard's page (package ui), public
//
// Every request but GET and HEAD must carry Content-Type: application/json
// (parameters allowed), bodiless ones included, or it is refused with 415
// unsupported_media_type before it reaches the Locker: browsers send other
// types across sites without a CORS preflight, and the API answers no
// preflight and sends no CORS headers.
//
// A multi-lock is an acquire (or release, extend) with "keys" instead of
// "key": all or nothing. Inspect and history take the key as the rest of
// the path, so a key's "/" may come raw or escaped (%2F, as the client
// sends every key); a last raw segment "history" asks the history, and
// raw empty, "." or ".." segments are refused rather than cleaned into
// another key (keypath.go has the rules).
//
// # Blocking and cancellation
//
// Acquire and campaign are long polls: the request stays open until the
// answer is known, with no polling by the client. An acquire without
// wait_ms (0) waits at most api.MaxWait, then answers 408 wait_timeout;
// the client re-issues it. The Locker call runs under the request's
// context, so a client that disconnects cancels its wait (the node removes
// the queued waiter through the log). The observe stream is flushed after
// every line and ends when the client disconnects.
//
// # Errors
//
// One table (package wire) maps api sentinels to status and code, used
// both ways (wire.StatusOf on the server, wire.ErrorOf in the client):
//
//	423 locked, lock_delay                     ErrLocked, ErrLockDelay
//	409 not_owner, stale_fence, conflict,      ErrNotOwner, ErrStaleFence, ErrConflict,
//	    max_hold                               ErrMaxHold (an extend past the hold's max hold)
//	404 not_held, not_found                    ErrNotHeld, ErrNotFound (and unknown routes)
//	408 wait_timeout, cancelled                ErrWaitTimeout, ErrCancelled, context errors
//	503 no_leader                              ErrNoLeader (retry elsewhere)
//	410 session_expired                        ErrSessionExpired
//	400 bad_request, limit                     ErrBadRequest, ErrLimit: garbage or trailing
//	                                           JSON, unknown fields, missing key/owner,
//	                                           numbers that do not fit 64 bits, a value
//	                                           past the Locker's api.Limits (a ttl, wait,
//	                                           permits, size), a fence check token above
//	                                           the highest fence granted
//	507 out_of_memory                          ErrOutOfMemory: the key space is past its
//	                                           memory limit (--max-memory); releases still work
//	413 limit                                  ErrBodyTooLarge: body over MaxBodyBytes
//	408 bad_request                            ErrBodyTimeout: body not in within BodyTimeout
//	503 too_many_connections                   ErrTooManyConns: over MaxConns (LimitListener)
//	415 unsupported_media_type                 ErrContentType: a write without JSON's type
//	401 unauthorized                           ErrUnauthorized: Config.Users set, and no or
//	                                           wrong HTTP Basic credentials
//	403 forbidden                              ErrForbidden: the user lacks the route's
//	                                           category (auth.go) or a key is outside its
//	                                           patterns ("force" release needs admin)
//	500 internal                               anything else
//
// Bad input is refused before the Locker is called and changes nothing:
// every request body is checked by its api type's Validate with the
// Locker's limits (api.LimitsOf). Only the fence registry's bound is the
// Locker's own check.
package httpapi
