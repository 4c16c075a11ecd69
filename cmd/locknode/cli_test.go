package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/httpapi/httpapitest"
)

// exec runs a command line in-process: exit code, stdout, stderr.
func execLine(args ...string) (int, string, string) {
	var out, errb syncBuffer
	code := execute(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// allCommands walks the command tree, the root included.
func allCommands() []*cobra.Command {
	var out []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		out = append(out, c)
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRoot(io.Discard, io.Discard))
	return out
}

// path is a command's words after "locknode".
func path(c *cobra.Command) []string {
	return strings.Fields(strings.TrimPrefix(c.CommandPath(), "locknode"))
}

func TestHelpOfEveryCommand(t *testing.T) {
	for _, c := range allCommands() {
		if c.Name() == "help" || c.DisableFlagParsing {
			continue
		}
		for _, h := range []string{"--help", "-h"} {
			args := append(path(c), h)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				code, out, errb := execLine(args...)
				if code != 0 || errb != "" {
					t.Fatalf("exit %d, stderr %q", code, errb)
				}
				want := []string{"Usage:\n  " + c.CommandPath(), "Exit codes:\n", "  2    bad command line"}
				if c.Parent() != nil && c.Parent().Name() != "completion" {
					want = append(want, "Examples:\n")
					if ex := c.Example; !strings.Contains(ex, c.CommandPath()) {
						t.Errorf("the examples do not run %s:\n%s", c.CommandPath(), ex)
					}
				}
				if c.HasAvailableFlags() {
					want = append(want, "[$LOCKNODE_")
				}
				if c.Name() == "lock" || c.Name() == "elect" {
					want[2] = "  2          bad command line"
				}
				for _, w := range want {
					if !strings.Contains(out, w) {
						t.Errorf("help lacks %q:\n%s", w, out)
					}
				}
			})
		}
	}
	// "help CMD" is the same as "CMD --help".
	if code, out, _ := execLine("help", "status"); code != 0 || !strings.Contains(out, "locknode status [flags]") {
		t.Fatalf("help status: %d %q", code, out)
	}
}

func TestUsageErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want []string // on stderr, in this order
	}{
		{"nothing", nil, []string{"locknode: a command is required", "Usage:", "locknode [command]"}},
		{"unknown command", []string{"nope"}, []string{`unknown command "nope"`, "Run 'locknode --help' for usage."}},
		{"unknown flag", []string{"status", "--bogus"}, []string{"locknode status: unknown flag: --bogus", "Run 'locknode status --help'"}},
		{"duration without unit", []string{"lock", "--ttl", "5", "job", "--", "true"},
			[]string{`locknode lock: invalid argument "5" for "--ttl" flag: time: missing unit`, "Run 'locknode lock --help'"}},
		{"extra argument", []string{"locks", "what"}, []string{`locknode locks: unexpected arguments ["what"]`}},
		{"version with an argument", []string{"version", "extra"}, []string{`locknode version: unexpected arguments ["extra"]`}},
		{"serve names its flags", []string{"serve"}, []string{"--id (LOCKNODE_ID) is required", "--data (LOCKNODE_DATA) is required"}},
		{"serve peers without itself", []string{"serve", "--id", "a", "--data", "d", "--bootstrap", "--peers", "b=h:1"},
			[]string{"--peers must include this node (--id a)"}},
		{"lock without a command", []string{"lock", "job"}, []string{"locknode lock: a lock NAME and a command after it are required"}},
		{"elect without a value", []string{"elect", "e", "--", "true"}, []string{"locknode elect: an election NAME, a VALUE and a command"}},
		{"members without a subcommand", []string{"members"}, []string{"locknode members: a subcommand is required"}},
		{"members remove without an id", []string{"members", "remove"}, []string{"locknode members remove: want a member ID, got 0 argument(s)"}},
		{"release without --force", []string{"release", "job"}, []string{"locknode release: --force is required"}},
		{"bad value in the environment", []string{"status", "--endpoints", "http://127.0.0.1:1"}, nil},
		{"completion for an unknown shell", []string{"completion", "tcsh"}, []string{"locknode completion"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "bad value in the environment" {
				t.Setenv("LOCKNODE_TIMEOUT", "soon")
				tc.want = []string{`locknode status: LOCKNODE_TIMEOUT="soon" (--timeout): time: invalid duration`}
			}
			code, out, errb := execLine(tc.args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, exitUsage, errb)
			}
			if out != "" {
				t.Errorf("a usage error printed on stdout: %q", out)
			}
			rest := errb
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("stderr lacks %q (in order):\n%s", w, errb)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestJSONOutputParses(t *testing.T) {
	fake := httpapitest.NewFake()
	srv := httpapitest.NewServer(t, fake)
	if _, err := fake.TryAcquire(context.Background(), api.AcquireRequest{Key: "job", Owner: "o", TTLMs: 60000}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		into any
	}{
		{[]string{"status"}, &api.Status{}},
		{[]string{"status", "--cluster"}, &[]nodeStatus{}},
		{[]string{"locks"}, &[]api.LockInfo{}},
		{[]string{"members", "list"}, &[]api.Member{}},
		{[]string{"join", "--id", "n9", "--raft-addr", "10.0.0.9:7000"}, &map[string]string{}},
		{[]string{"release", "--force", "job"}, &api.ReleaseResult{}},
		{[]string{"version"}, &map[string]string{}},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append(append([]string{}, tc.args...), "--json")
			if tc.args[0] != "version" {
				args = append(args, "--endpoints", srv.URL)
			}
			code, out, errb := execLine(args...)
			if code != 0 {
				t.Fatalf("exit %d; stderr %s", code, errb)
			}
			dec := json.NewDecoder(strings.NewReader(out))
			dec.DisallowUnknownFields()
			if err := dec.Decode(tc.into); err != nil {
				t.Fatalf("%v in %s", err, out)
			}
			if dec.More() {
				t.Fatalf("more than one JSON value: %s", out)
			}
		})
	}
}

func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		t.Run(sh, func(t *testing.T) {
			code, out, errb := execLine("completion", sh)
			if code != 0 || errb != "" || len(out) < 1000 || !strings.Contains(out, "locknode") {
				t.Fatalf("exit %d, %d bytes, stderr %q", code, len(out), errb)
			}
		})
	}
	// The shells call back for candidates: subcommands and flags.
	code, out, _ := execLine(cobra.ShellCompRequestCmd, "sta")
	if code != 0 || !strings.Contains(out, "status") {
		t.Fatalf("completing sta: %d %q", code, out)
	}
	code, out, _ = execLine(cobra.ShellCompRequestCmd, "lock", "--w")
	if code != 0 || !strings.Contains(out, "--wait") {
		t.Fatalf("completing lock --w: %d %q", code, out)
	}
	code, out, _ = execLine(cobra.ShellCompRequestCmd, "serve", "--log-format", "")
	if code != 0 || !strings.Contains(out, "text\njson\n") {
		t.Fatalf("completing serve --log-format: %d %q", code, out)
	}
}

// sampleValue is a valid value of a flag type, unlike its default.
var sampleValue = map[string]string{"string": "sample", "duration": "7s", "bool": "true", "int": "7"}

// Every flag of every command can be set by its LOCKNODE_* variable,
// which its help line names; the command line wins over it.
func TestEveryFlagHasAWorkingEnvironmentVariable(t *testing.T) {
	seen := 0
	for _, c := range allCommands() {
		if c.DisableFlagParsing {
			continue
		}
		c.Flags().AddFlagSet(c.InheritedFlags())
		c.Flags().VisitAll(func(f *flag.Flag) {
			if noEnv[f.Name] {
				return
			}
			seen++
			env := envOf(f)
			t.Run(c.CommandPath()+" --"+f.Name, func(t *testing.T) {
				if !strings.Contains(f.Usage, "[$"+env+"]") {
					t.Errorf("help of --%s does not name %s: %q", f.Name, env, f.Usage)
				}
				v, ok := sampleValue[f.Value.Type()]
				if !ok {
					t.Fatalf("no sample value for type %s", f.Value.Type())
				}
				t.Setenv(env, v)
				root := newRoot(io.Discard, io.Discard)
				cmd, _, err := root.Find(path(c))
				if err != nil {
					t.Fatal(err)
				}
				if err := cmd.ParseFlags(nil); err != nil {
					t.Fatal(err)
				}
				if err := applyEnv(cmd); err != nil {
					t.Fatal(err)
				}
				if got := cmd.Flags().Lookup(f.Name).Value.String(); got != v {
					t.Fatalf("%s=%s: the flag is %q", env, v, got)
				}
			})
		})
	}
	if seen < 100 {
		t.Fatalf("only %d flags walked", seen)
	}

	// End to end: the variable is used, and a flag given wins.
	srv := httpapitest.NewServer(t, httpapitest.NewFake())
	t.Setenv("LOCKNODE_ENDPOINTS", srv.URL)
	t.Setenv("LOCKNODE_JSON", "true")
	code, out, errb := execLine("status")
	if code != 0 || !json.Valid([]byte(out)) {
		t.Fatalf("status from the environment: %d %q %s", code, out, errb)
	}
	code, out, _ = execLine("status", "--json=false")
	if code != 0 || json.Valid([]byte(out)) || !strings.Contains(out, "leader=fake") {
		t.Fatalf("--json=false over LOCKNODE_JSON: %d %q", code, out)
	}
	t.Setenv("LOCKNODE_JOIN_TIMEOUT", "soon")
	if code, _, errb := execLine("serve", "--id", "a", "--data", t.TempDir()); code != exitUsage || !strings.Contains(errb, "LOCKNODE_JOIN_TIMEOUT") {
		t.Fatalf("bad LOCKNODE_JOIN_TIMEOUT: %d %s", code, errb)
	}
}

// Flags that mean something else than serve's flag of the same name read
// their own variable, so serve's environment does not leak into them.
func TestOwnEnvironmentVariables(t *testing.T) {
	t.Setenv("LOCKNODE_ID", "n1")
	t.Setenv("LOCKNODE_RAFT_ADDR", "10.0.0.1:7000")
	srv := httpapitest.NewServer(t, httpapitest.NewFake())
	if code, _, errb := execLine("join", "--endpoints", srv.URL); code != exitUsage || !strings.Contains(errb, "--id and --raft-addr are required") {
		t.Fatalf("join took serve's LOCKNODE_ID: %d %s", code, errb)
	}
	t.Setenv("LOCKNODE_JOIN_ID", "n4")
	t.Setenv("LOCKNODE_JOIN_RAFT_ADDR", "10.0.0.4:7000")
	if code, out, errb := execLine("join", "--endpoints", srv.URL); code != 0 || out != "added n4 at 10.0.0.4:7000\n" {
		t.Fatalf("join from LOCKNODE_JOIN_*: %d %q %s", code, out, errb)
	}
	if _, out, _ := execLine("dev", "--help"); !strings.Contains(out, "[$LOCKNODE_DEV_DATA]") || strings.Contains(out, "[$LOCKNODE_DATA]") {
		t.Fatalf("dev --data's variable:\n%s", out)
	}
}

// release --force is a confirmation: no variable gives it.
func TestForceIsNotInherited(t *testing.T) {
	srv := httpapitest.NewServer(t, httpapitest.NewFake())
	t.Setenv("LOCKNODE_FORCE", "true")
	if code, _, errb := execLine("release", "job", "--endpoints", srv.URL); code != exitUsage {
		t.Fatalf("LOCKNODE_FORCE released: %d %s", code, errb)
	}
}

// A command written as a plain function (register) gets every argument
// as typed, flags and -h included, and its exit code is the process's.
func TestPlainFunctionCommand(t *testing.T) {
	if commands["plain-test"] == nil { // -count=N runs this again
		register(&command{name: "plain-test", summary: "a test", run: func(_ context.Context, args []string, stdout, _ io.Writer) int {
			fmt.Fprint(stdout, strings.Join(args, " "))
			return 3
		}})
	}
	code, out, _ := execLine("plain-test", "-h", "--data", "d", "x", "--", "y")
	if code != 3 || out != "-h --data d x -- y" {
		t.Fatalf("exit %d, got %q", code, out)
	}
	if code, out, _ := execLine("--help"); code != 0 || !strings.Contains(out, "plain-test") {
		t.Fatalf("root help does not list it: %q", out)
	}
}
