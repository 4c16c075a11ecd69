package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"
)

// The command line is spf13/cobra: one *cobra.Command per subcommand,
// built fresh for every run (flags bind to variables of that build), so
// tests can run commands in parallel.

// exitOK is success; the other exit codes are with lock's (lock.go).
const exitOK = 0

// sharedExitCodes ends the help of commands without codes of their own.
const sharedExitCodes = `  0    done
  1    no leader reachable (no quorum, or wrong --endpoints / LOCKNODE_ENDPOINTS), or the cluster refused
  2    bad command line (the reason is printed first)
`

// localExitCodes end the help of commands that do not reach a cluster.
const localExitCodes = `  0    done
  2    bad command line (the reason is printed first)
`

// annExitCodes is the cobra annotation holding a command's exit code
// table for its help; annMaxArgs the number of positional arguments
// before a command to run (lock, elect): the first word after them
// starts the command, even without "--".
const (
	annExitCodes = "locknode.exitcodes"
	annMaxArgs   = "locknode.maxargs"
)

// command is a subcommand written as a plain function over its own
// arguments, without cobra. It parses args (the arguments after its
// name, -h included) itself and returns the process exit code; run
// ends when ctx does (SIGINT/SIGTERM) or the work is done. A file adds
// one with register from init (snapshot save|restore is written so).
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

var (
	// commands is every subcommand by name, cobra-built ones included,
	// each callable as a plain function (tests do).
	commands = map[string]*command{}
	// builders make the cobra subcommands, in registration order.
	builders []func() *cobra.Command
)

// register adds a plain-function command; it becomes a cobra command
// whose arguments all go to run.
func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("locknode: command registered twice: " + c.name)
	}
	commands[c.name] = c
	builders = append(builders, func() *cobra.Command {
		return &cobra.Command{
			Use:                c.name + " [flags]",
			Short:              c.summary,
			DisableFlagParsing: true,
			RunE: func(cmd *cobra.Command, args []string) error {
				return exitWith(c.run(cmd.Context(), args, cmd.OutOrStdout(), cmd.ErrOrStderr()))
			},
		}
	})
}

// addCommand adds a cobra subcommand built by build.
func addCommand(build func() *cobra.Command) {
	probe := build()
	name := probe.Name()
	if _, dup := commands[name]; dup {
		panic("locknode: command registered twice: " + name)
	}
	commands[name] = &command{
		name:    name,
		summary: probe.Short,
		run: func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			return execute(ctx, append([]string{name}, args...), stdout, stderr)
		},
	}
	builders = append(builders, build)
}

// exitError ends a command with a process exit code. A nil err means
// the command already said why on stderr.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitWith turns a command body's exit code into RunE's error.
func exitWith(code int) error {
	if code == exitOK {
		return nil
	}
	return &exitError{code: code}
}

// usageError is a bad command line: exit 2, the reason, and where help is.
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// noArgs and exactArgs check positional arguments with messages that
// say what was expected.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError("unexpected arguments %q", args)
	}
	return nil
}

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError("want %s, got %d argument(s) %q", what, len(args), args)
		}
		return nil
	}
}

// flagEnv is the environment variable that sets flag name.
func flagEnv(name string) string {
	return "LOCKNODE_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// annEnv names a flag's variable when flagEnv's would be wrong.
const annEnv = "locknode.env"

// ownEnv gives flag name of fs the variable env instead of flagEnv's:
// for a flag that means something else than serve's flag of that name,
// where an environment set up for serve (a container, an env file)
// must not leak in. join --id names the node to add, not this one.
func ownEnv(fs *flag.FlagSet, name, env string) {
	if err := fs.SetAnnotation(name, annEnv, []string{env}); err != nil {
		panic("locknode: " + err.Error())
	}
}

// envOf is the variable that sets f.
func envOf(f *flag.Flag) string {
	if v := f.Annotations[annEnv]; len(v) == 1 {
		return v[0]
	}
	return flagEnv(f.Name)
}

// noEnv are the flags no environment variable sets: help and version
// ask for output, and release --force and join --force are
// confirmations that must be typed, not inherited from an environment.
var noEnv = map[string]bool{"help": true, "version": true, "force": true}

// applyEnv sets every flag the command line did not from its LOCKNODE_*
// variable. A bad value is a usage error naming the variable.
func applyEnv(cmd *cobra.Command) error {
	var err error
	cmd.Flags().VisitAll(func(f *flag.Flag) {
		if err != nil || f.Changed || noEnv[f.Name] {
			return
		}
		v, ok := os.LookupEnv(envOf(f))
		if !ok {
			return
		}
		if serr := f.Value.Set(v); serr != nil {
			err = usageError("%s=%q (--%s): %v", envOf(f), v, f.Name, serr)
		}
	})
	return err
}

// documentEnv appends each flag's variable to its help line.
func documentEnv(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if noEnv[f.Name] || strings.Contains(f.Usage, "$"+envOf(f)) {
			return
		}
		f.Usage = strings.ReplaceAll(f.Usage, " (env "+envOf(f)+")", "")
		f.Usage += " [$" + envOf(f) + "]"
	})
}

const usageTemplate = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

Commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableInheritedFlags}}

Global Flags:
{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if hasEnvFlags .}}

Environment:
  Each flag can also be set with the variable shown after it, [$LOCKNODE_<FLAG>]
  (upper case, - as _); a flag on the command line wins.{{end}}{{if index .Annotations "` + annExitCodes + `"}}

Exit codes:
{{index .Annotations "` + annExitCodes + `"}}{{end}}{{if .HasAvailableSubCommands}}
Use "{{.CommandPath}} [command] --help" for more about a command.{{end}}
`

func init() {
	cobra.AddTemplateFunc("hasEnvFlags", func(c *cobra.Command) bool {
		has := false
		c.Flags().VisitAll(func(f *flag.Flag) { has = has || !noEnv[f.Name] })
		c.InheritedFlags().VisitAll(func(f *flag.Flag) { has = has || !noEnv[f.Name] })
		return has
	})
}

// flagValues are the values shell completion offers for flags that
// take one of a few words.
var flagValues = map[string][]string{
	"log-level":  {"trace", "debug", "info", "warn", "error", "off"},
	"log-format": {"text", "json"},
}

// newRoot builds the whole command tree, writing to stdout and stderr.
func newRoot(stdout, stderr io.Writer) *cobra.Command {
	v, c := buildVersion()
	root := &cobra.Command{
		Use:   "locknode",
		Short: "a lock service on raft: fencing tokens, leases, FIFO waiting, a Redis protocol bridge",
		Long: `locknode runs lock service nodes and talks to them.

Servers:  dev (a whole cluster in one process), serve (one node).
Clients:  status, locks, lock, elect, release, members, join.`,
		Example: `  locknode dev                                 # a 3-node cluster on loopback
  locknode status --endpoints 127.0.0.1:8080
  locknode lock nightly-backup -- ./backup.sh
  locknode completion bash > /etc/bash_completion.d/locknode`,
		Version:       v,
		SilenceErrors: true,
		SilenceUsage:  true,
		Annotations:   map[string]string{annExitCodes: sharedExitCodes},
	}
	// Before the completion command, which keeps the writer it finds.
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate(versionText(v, c))
	root.SetUsageTemplate(usageTemplate)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: err}
	})
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if cmd.DisableFlagParsing {
			return nil
		}
		return applyEnv(cmd)
	}
	for _, b := range builders {
		root.AddCommand(b())
	}
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "completion":
			c.Example = `  source <(locknode completion bash)                   # this shell
  locknode completion bash > /etc/bash_completion.d/locknode
  locknode completion zsh > "${fpath[1]}/_locknode"
  locknode completion fish > ~/.config/fish/completions/locknode.fish
  locknode completion powershell | Out-String | Invoke-Expression`
			c.Annotations = map[string]string{annExitCodes: localExitCodes}
			c.RunE = func(_ *cobra.Command, args []string) error {
				if len(args) == 0 {
					return usageError("a shell is required: bash, zsh, fish or powershell")
				}
				return usageError("unknown shell %q (bash, zsh, fish, powershell)", args[0])
			}
			for _, sh := range c.Commands() {
				sh.Annotations = map[string]string{annExitCodes: localExitCodes}
			}
		case "help":
			c.Example = "  locknode help lock"
			c.Annotations = map[string]string{annExitCodes: localExitCodes}
		case "version":
			c.Annotations = map[string]string{annExitCodes: localExitCodes}
		}
	}
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		if cmd.Annotations == nil {
			cmd.Annotations = map[string]string{}
		}
		if _, ok := cmd.Annotations[annExitCodes]; !ok && !cmd.DisableFlagParsing {
			cmd.Annotations[annExitCodes] = sharedExitCodes
		}
		for name, values := range flagValues {
			if cmd.Flags().Lookup(name) != nil {
				_ = cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
			}
		}
		documentEnv(cmd.Flags())
		documentEnv(cmd.PersistentFlags())
		if cmd.Args == nil && !cmd.HasSubCommands() && cmd.Name() != "help" && !cmd.DisableFlagParsing {
			cmd.Args = noArgs
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return root
}

// execute runs the command line args (without the program name) and
// returns the process exit code.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	if len(args) == 0 {
		// A bare "locknode" is not a request for help: scripts that
		// lost their arguments should fail.
		fmt.Fprintln(stderr, "locknode: a command is required")
		root.SetOut(stderr)
		_ = root.Usage()
		return exitUsage
	}
	root.SetArgs(normalizeArgs(root, args))
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if !errors.As(err, &ee) {
		// Cobra's own: an unknown command or flag.
		ee = &exitError{code: exitUsage, err: err}
	}
	if ee.err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), ee.err)
	}
	if ee.code == exitUsage {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return ee.code
}
