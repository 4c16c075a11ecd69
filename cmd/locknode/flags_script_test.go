package main

import (
	"io"
	"testing"

	flag "github.com/spf13/pflag"

	"github.com/locknode/locknode/fsm"
)

func TestScriptLimitFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want fsm.Config
		bad  bool
	}{
		{args: nil, want: fsm.DefaultConfig()},
		{args: []string{"--max-script-steps", "5000", "--max-script-memory", "512KiB", "--max-multi-commands", "7", "--max-multi-bytes", "1MB"},
			want: fsm.Config{MaxScriptSteps: 5000, MaxScriptMemory: 512 << 10, MaxExecCommands: 7, MaxExecBytes: 1e6}},
		{args: []string{"--max-script-steps", "0"}, bad: true},
		{args: []string{"--max-script-steps", "-5"}, bad: true},
		{args: []string{"--max-script-memory", "32"}, want: fsm.Config{MaxScriptMemory: 32}},
		{args: []string{"--max-script-memory", "32QB"}, bad: true},
		{args: []string{"--max-multi-bytes", "9GiB"}, bad: true},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		l := addScriptLimitFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		cfg := fsm.DefaultConfig()
		err := l.apply(&cfg)
		if tc.bad {
			if err == nil {
				t.Errorf("%v: accepted", tc.args)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		want := fsm.DefaultConfig()
		if tc.want.MaxScriptSteps != 0 {
			want.MaxScriptSteps = tc.want.MaxScriptSteps
		}
		if tc.want.MaxScriptMemory != 0 {
			want.MaxScriptMemory = tc.want.MaxScriptMemory
		}
		if tc.want.MaxExecCommands != 0 {
			want.MaxExecCommands = tc.want.MaxExecCommands
		}
		if tc.want.MaxExecBytes != 0 {
			want.MaxExecBytes = tc.want.MaxExecBytes
		}
		if cfg != want {
			t.Errorf("%v: got %+v, want %+v", tc.args, cfg, want)
		}
	}
}
