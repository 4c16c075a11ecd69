package api

import (
	"context"
	"os"
	"strconv"
	"sync"
)

// Names of the metadata entries the Go client, the embedded node and
// `locknode lock` fill in by default.
const (
	MetaHost = "host" // the acquiring process's host name
	MetaPID  = "pid"  // its process id
	MetaCmd  = "cmd"  // its command line (locknode lock)
)

var processMeta = sync.OnceValue(func() map[string]string {
	m := map[string]string{MetaPID: strconv.Itoa(os.Getpid())}
	if h, err := os.Hostname(); err == nil && h != "" {
		m[MetaHost] = h
	}
	return m
})

// ProcessMeta returns this process's host name and pid as metadata
// entries (a fresh map).
func ProcessMeta() map[string]string {
	out := make(map[string]string, 2)
	for k, v := range processMeta() {
		out[k] = v
	}
	return out
}

// WithProcessMeta returns meta with this process's host and pid added
// where meta has no entry of that name. They are defaults, not the
// caller's input: when meta leaves no room for them within l, meta is
// returned as it is (and checked as it is). meta is not changed.
func (l Limits) WithProcessMeta(meta map[string]string) map[string]string {
	pm := processMeta()
	missing := 0
	for k := range pm {
		if _, ok := meta[k]; !ok {
			missing++
		}
	}
	if missing == 0 {
		return meta
	}
	out := make(map[string]string, len(meta)+missing)
	for k, v := range meta {
		out[k] = v
	}
	for k, v := range pm {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	if l.WithDefaults().CheckMeta(out) != nil {
		return meta
	}
	return out
}

type noDefaultMetaKey struct{}

// WithoutDefaultMeta returns ctx marked so that an acquire made with it
// through a Locker gets no default metadata (the calling process's host
// and pid, see WithProcessMeta). Front ends that pass on other
// processes' requests to an embedded node (the HTTP API, the RESP
// bridge) mark their contexts, so that the node never records its own
// process as the holder; a program may mark its own to leave the
// defaults out.
func WithoutDefaultMeta(ctx context.Context) context.Context {
	return context.WithValue(ctx, noDefaultMetaKey{}, true)
}

// DefaultMetaOff reports whether ctx was marked by WithoutDefaultMeta.
func DefaultMetaOff(ctx context.Context) bool {
	off, _ := ctx.Value(noDefaultMetaKey{}).(bool)
	return off
}
