package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/locknode/locknode/internal/proctune"
)

// Process-wide runtime flags shared by serve and dev (the memory limit,
// the GC target and GOMAXPROCS, planned and applied by
// internal/proctune), and the optional pprof listener.

const memoryLimitUsage = "Go soft memory limit: bytes with a unit (512MiB, 2GiB, 800MB), a percentage of the cgroup limit or else of physical memory (75%), or off; " +
	"default: 90% of the cgroup memory limit if there is one, else none. GOMEMLIMIT, if set, wins"

var gcPercentUsage = fmt.Sprintf("Go GC target: auto (a percentage that keeps the heap within about %d MiB of the live data, %d-%d), "+
	"a percentage (heap growth over live data before a collection, as GOGC), or off; default auto. GOGC, if set, wins",
	proctune.AutoGCHeadroom>>20, proctune.AutoGCMinPercent, proctune.AutoGCMaxPercent)

const gomaxprocsUsage = "Go Ps (threads running Go code at once): a number, or 0 for Go's default (the CPUs available); " +
	"1 cuts CPU per request where several nodes share 2 CPUs. GOMAXPROCS, if set, wins"

// planRuntime checks the --pprof, --memory-limit and --gc-percent values
// of command cmd; on a bad one it says so on stderr and returns false.
func planRuntime(cmd string, stderr io.Writer, pprofAddr, memLimit, gcPct string) (proctune.MemLimitPlan, proctune.GCPercentPlan, bool) {
	if pprofAddr != "" {
		if err := checkPprofAddr(pprofAddr); err != nil {
			fmt.Fprintf(stderr, "%s: --pprof: %v\n", cmd, err)
			return proctune.MemLimitPlan{}, proctune.GCPercentPlan{}, false
		}
	}
	memPlan, err := proctune.MemoryLimit(memLimit)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --memory-limit: %v\n", cmd, err)
		return proctune.MemLimitPlan{}, proctune.GCPercentPlan{}, false
	}
	gcPlan, err := proctune.GCPercent(gcPct)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --gc-percent: %v\n", cmd, err)
		return proctune.MemLimitPlan{}, proctune.GCPercentPlan{}, false
	}
	return memPlan, gcPlan, true
}

// parseBytes reads a size (proctune.ParseBytes); every flag that takes a
// size reads it here.
func parseBytes(s string) (int64, error) { return proctune.ParseBytes(s) }

// pprofServer serves net/http/pprof on its own listener, apart from the
// API so profiling is never exposed on the client port by accident.
type pprofServer struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

var errPprofAddr = errors.New("want host:port")

// checkPprofAddr rejects a --pprof value that is not host:port, before
// anything starts.
func checkPprofAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: %w", addr, errPprofAddr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("%q: bad port: %w", addr, errPprofAddr)
	}
	return nil
}

// startPprof listens on addr and serves /debug/pprof/ there.
func startPprof(addr string, log hclog.Logger) (*pprofServer, error) {
	if err := checkPprofAddr(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	p := &pprofServer{
		ln:   ln,
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		done: make(chan struct{}),
	}
	// Ends when Close shuts the server down (Serve then returns).
	go func() {
		defer close(p.done)
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("pprof server", "error", err)
		}
	}()
	log.Info("pprof listening", "addr", ln.Addr().String())
	return p, nil
}

// Addr is the bound address.
func (p *pprofServer) Addr() string { return p.ln.Addr().String() }

// Close stops the server; a profile being taken is cut short.
func (p *pprofServer) Close() {
	if p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil {
		_ = p.srv.Close()
	}
	<-p.done
}
