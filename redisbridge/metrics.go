package redisbridge

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// cmdStats counts commands by name and error replies by their error code
// (the first word, as Redis' errorstat_* in INFO). Label values are
// bounded: a name the bridge does not know counts as "unknown", an error
// that does not start with an upper-case code as "ERR".
type cmdStats struct {
	commands *prometheus.CounterVec
	errors   *prometheus.CounterVec
	byName   sync.Map // string -> prometheus.Counter
	byCode   sync.Map
}

func newCmdStats() *cmdStats {
	return &cmdStats{
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "locknode_resp_commands_total",
			Help: "RESP commands received, by command name (unknown names as \"unknown\").",
		}, []string{"command"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "locknode_resp_errors_total",
			Help: "RESP error replies written, by error code (the reply's first word: ERR, WRONGTYPE, NOPERM, OOM, ...).",
		}, []string{"code"}),
	}
}

func (st *cmdStats) command(name string) {
	if c, ok := st.byName.Load(name); ok {
		c.(prometheus.Counter).Inc()
		return
	}
	c, _ := st.byName.LoadOrStore(name, st.commands.WithLabelValues(name))
	c.(prometheus.Counter).Inc()
}

func (st *cmdStats) errorReply(msg string) {
	code := errorCode(msg)
	if c, ok := st.byCode.Load(code); ok {
		c.(prometheus.Counter).Inc()
		return
	}
	c, _ := st.byCode.LoadOrStore(code, st.errors.WithLabelValues(code))
	c.(prometheus.Counter).Inc()
}

// errorCode is msg's first word when it is an upper-case code of at most
// 32 letters, digits or underscores; "ERR" otherwise.
func errorCode(msg string) string {
	i := 0
	for i < len(msg) && i <= 32 {
		c := msg[i]
		if c == ' ' {
			break
		}
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return "ERR"
		}
		i++
	}
	if i == 0 || i > 32 {
		return "ERR"
	}
	return msg[:i]
}

// Collectors returns the bridge's Prometheus metrics
// (locknode_resp_commands_total, locknode_resp_errors_total), for the
// node's registry.
func (s *Server) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.stats.commands, s.stats.errors}
}
