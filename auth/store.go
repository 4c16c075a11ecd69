package auth

import (
	"fmt"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
)

// Audit events counted in locknode_audit_events_total{event=...}.
const (
	EventForceRelease      = "force_release"
	EventMemberAdd         = "member_add"
	EventMemberRemove      = "member_remove"
	EventTransferLeader    = "transfer_leader"
	EventUsersReload       = "users_reload"
	EventUsersReloadFailed = "users_reload_failed"
)

// Reasons of locknode_auth_failures_total{reason=...}.
const (
	ReasonCredentials = "credentials" // missing or wrong credentials
	ReasonPermission  = "permission"  // authenticated, not allowed
)

// Store holds the current users of a node and swaps them atomically on
// Reload, so a reload never stops requests: each request looks its user
// up in the set current when it runs. A nil *Store means authentication
// is off: every method is safe to call on it.
type Store struct {
	path  string
	users atomic.Pointer[Users]
	audit *Audit
}

// NewStore reads the users file at path. Reloads are audited to audit
// (nil: not audited).
func NewStore(path string, audit *Audit) (*Store, error) {
	us, err := ParseFile(path)
	if err != nil {
		return nil, err
	}
	s := NewStoreFrom(us, audit)
	s.path = path
	return s, nil
}

// NewStoreFrom returns a Store serving us (which Reload cannot re-read:
// tests and embedders that build users in code).
func NewStoreFrom(us *Users, audit *Audit) *Store {
	s := &Store{audit: audit}
	s.users.Store(us)
	return s
}

// Enabled reports whether users are configured.
func (s *Store) Enabled() bool { return s != nil }

// Users returns the current users (nil when s is nil).
func (s *Store) Users() *Users {
	if s == nil {
		return nil
	}
	return s.users.Load()
}

// Reload re-reads the users file. On error the current users stay in
// force. Either way the outcome is audited.
func (s *Store) Reload() error {
	if s == nil {
		return nil
	}
	if s.path == "" {
		return fmt.Errorf("auth: reload: users were not read from a file")
	}
	us, err := ParseFile(s.path)
	if err != nil {
		s.audit.Event(EventUsersReloadFailed, "", "", "file", s.path, "error", err)
		return err
	}
	s.users.Store(us)
	s.audit.Event(EventUsersReload, "", "", "file", s.path, "users", len(us.names))
	return nil
}

// Audit writes the audit log (WARN lines) and counts audited events and
// refused requests. A nil *Audit does nothing.
type Audit struct {
	log      hclog.Logger
	events   *prometheus.CounterVec
	failures *prometheus.CounterVec
}

// NewAudit returns an Audit logging to log (nil: a null logger).
func NewAudit(log hclog.Logger) *Audit {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Audit{
		log: log,
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "locknode_audit_events_total",
			Help: "Audited events: forced releases, membership changes, users-file reloads.",
		}, []string{"event"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "locknode_auth_failures_total",
			Help: "Refused requests by protocol: reason=credentials (missing or wrong), reason=permission.",
		}, []string{"proto", "reason"}),
	}
}

// Event logs one audited event at WARN with who did it and from where,
// and counts it. kv are more hclog key/value pairs (the key or member).
func (a *Audit) Event(event, user, remote string, kv ...any) {
	if a == nil {
		return
	}
	a.events.WithLabelValues(event).Inc()
	args := append([]any{"event", event, "user", user, "remote", remote}, kv...)
	a.log.Warn("audit", args...)
}

// Failure counts a refused request: reason "credentials" (missing or
// wrong) or "permission"; proto "http" or "resp".
func (a *Audit) Failure(proto, reason string) {
	if a == nil {
		return
	}
	a.failures.WithLabelValues(proto, reason).Inc()
}

// Collectors returns the metrics, for a Prometheus registry.
func (a *Audit) Collectors() []prometheus.Collector {
	if a == nil {
		return nil
	}
	return []prometheus.Collector{a.events, a.failures}
}

// Reloadable reports whether Reload can re-read a file (users were read
// from one).
func (s *Store) Reloadable() bool { return s != nil && s.path != "" }
