package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/locknode/locknode/api"
)

func init() {
	register(&command{name: "members", summary: "cluster membership: members list|remove ID|leave", run: runMembers})
	register(&command{name: "release", summary: "release a lock whoever holds it (admin): release --force KEY", run: runRelease})
}

// runMembers lists the raft configuration, removes a member, or removes
// the node the first endpoint names (leave: run it against the node that
// goes away).
func runMembers(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("members", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: locknode members list [--json] [flags]
       locknode members remove ID [flags]   remove a member (admin)
       locknode members leave [flags]       remove the node the first --endpoints address names (admin)`)
		fs.PrintDefaults()
	}
	cf := addClientFlags(fs)
	asJSON := fs.Bool("json", false, "print a JSON array of members")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	flags, pos, tail := interspersed(fs, args, 2)
	if err := fs.Parse(flags); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	pos = append(pos, tail...)
	usageErr := func(msg string) int {
		fmt.Fprintln(stderr, "locknode members:", msg)
		fs.Usage()
		return exitUsage
	}
	if len(pos) == 0 {
		return usageErr("a subcommand is required")
	}
	want := map[string]int{"list": 0, "remove": 1, "leave": 0}
	n, ok := want[pos[0]]
	switch {
	case !ok:
		return usageErr(fmt.Sprintf("unknown subcommand %q", pos[0]))
	case len(pos)-1 != n:
		return usageErr(fmt.Sprintf("%s takes %d argument(s)", pos[0], n))
	}
	c, err := cf.client(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "locknode members:", err)
		return exitUsage
	}
	rctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	switch pos[0] {
	case "list":
		st, err := c.Status(rctx)
		if err != nil {
			fmt.Fprintln(stderr, "locknode members:", explain(err))
			return exitLockFailed
		}
		if *asJSON {
			return printJSON(stdout, stderr, st.Members)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tADDRESS\tSUFFRAGE\tLEADER")
		for _, m := range st.Members {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%v\n", m.ID, m.Address, m.Suffrage, m.Leader)
		}
		tw.Flush()
		return 0
	case "leave":
		// Ask the first endpoint alone who it is: with fail-over another
		// node could answer and remove itself instead.
		first := splitEndpoints(*cf.endpoints)
		if len(first) == 0 {
			return usageErr("--endpoints / LOCKNODE_ENDPOINTS is empty")
		}
		one := cf
		one.endpoints = &first[0]
		oc, err := one.client(stderr)
		if err != nil {
			fmt.Fprintln(stderr, "locknode members:", err)
			return exitUsage
		}
		st, err := oc.Status(rctx)
		if err != nil {
			fmt.Fprintln(stderr, "locknode members: leave:", explain(err))
			return exitLockFailed
		}
		pos = append(pos, st.ID)
	}
	id := pos[len(pos)-1]
	if err := c.RemoveServer(rctx, id); err != nil {
		fmt.Fprintf(stderr, "locknode members: removing %s: %s\n", id, explain(err))
		return exitLockFailed
	}
	fmt.Fprintf(stdout, "removed %s\n", id)
	return 0
}

// runRelease ends every hold on KEY whoever holds it. Holders are not
// told: their next renewal fails, and fenced writes with their token are
// refused once the next holder's token is checked.
func runRelease(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: locknode release --force KEY [flags]   (admin; a lock's own holder releases it by ending \"locknode lock\")")
		fs.PrintDefaults()
	}
	cf := addClientFlags(fs)
	force := fs.Bool("force", false, "required: release whoever holds KEY")
	asJSON := fs.Bool("json", false, "print the release result as JSON")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	flags, pos, tail := interspersed(fs, args, 1)
	if err := fs.Parse(flags); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	pos = append(pos, tail...)
	if len(pos) != 1 || !*force {
		fmt.Fprintln(stderr, "locknode release: --force and exactly one KEY are required")
		fs.Usage()
		return exitUsage
	}
	c, err := cf.client(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "locknode release:", err)
		return exitUsage
	}
	rctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	res, err := c.Release(rctx, api.ReleaseRequest{Key: pos[0], Force: true})
	switch {
	case errors.Is(err, api.ErrNotHeld):
		res.Released = false
	case err != nil:
		fmt.Fprintf(stderr, "locknode release: %s: %s\n", pos[0], explain(err))
		return exitLockFailed
	}
	if *asJSON {
		return printJSON(stdout, stderr, res)
	}
	if res.Released {
		fmt.Fprintf(stdout, "released %s\n", pos[0])
	} else {
		fmt.Fprintf(stdout, "%s was not held\n", pos[0])
	}
	return 0
}
