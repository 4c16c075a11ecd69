package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/locknode/locknode/cluster"
)

func init() {
	addCommand(func() *cobra.Command {
		cmd := &cobra.Command{
			Use:     "version",
			Short:   "print the version, commit and Go version (also --version)",
			Example: "  locknode version\n  locknode --version\n  locknode version --json",
			Args:    noArgs,
		}
		asJSON := cmd.Flags().Bool("json", false, "print a JSON object: version, commit, cluster_versions, go, os, arch")
		cmd.RunE = func(cmd *cobra.Command, _ []string) error {
			v, c := buildVersion()
			if *asJSON {
				return exitWith(printJSON(cmd.OutOrStdout(), cmd.ErrOrStderr(), map[string]string{
					"version": v, "commit": c, "cluster_versions": cluster.LocalVersions().String(), "go": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH}))
			}
			fmt.Fprint(cmd.OutOrStdout(), versionText(v, c))
			return nil
		}
		return cmd
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

// versionText is what version and --version print.
func versionText(version, commit string) string {
	return fmt.Sprintf("locknode %s\ncommit %s\ncluster versions %s\n%s %s/%s\n", version, commit, cluster.LocalVersions(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
