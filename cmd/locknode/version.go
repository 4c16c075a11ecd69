package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

func init() {
	register(&command{
		name:    "version",
		summary: "print the version, commit and Go version (also --version)",
		run:     runVersion,
	})
}

// Set at link time (make build: -X main.linkVersion=… -X main.linkCommit=…);
// empty otherwise.
var linkVersion, linkCommit string

// buildVersion describes this binary: what the link set, else what the Go
// toolchain recorded in it (the module version, a tag when installed with
// go install; the VCS commit of a build from a checkout).
func buildVersion() (version, commit string) {
	defer func() {
		if linkVersion != "" {
			version = linkVersion
		}
		if linkCommit != "" {
			commit = linkCommit
		}
	}()
	version, commit = "(devel)", "unknown"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return version, commit
	}
	if v := bi.Main.Version; v != "" {
		version = v
	}
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && commit != "unknown" {
		commit += "-dirty"
	}
	return version, commit
}

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "version: unexpected arguments %q\n", args)
		return 2
	}
	v, c := buildVersion()
	fmt.Fprintf(stdout, "locknode %s\ncommit %s\n%s %s/%s\n", v, c, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}

// buildInfo is locknode_build_info: 1, labelled with what this binary is,
// so dashboards can tell which version each node runs.
func buildInfo() prometheus.Collector {
	v, c := buildVersion()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "locknode_build_info",
		Help:        "Always 1; the labels say which build this node runs.",
		ConstLabels: prometheus.Labels{"version": v, "commit": c, "goversion": runtime.Version()},
	})
	g.Set(1)
	return g
}
