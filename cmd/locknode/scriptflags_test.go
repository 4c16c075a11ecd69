package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	flag "github.com/spf13/pflag"

	"github.com/locknode/locknode/fsm"
)

func TestScriptFlags(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		args    []string
		loaded  int
		eval    int
		wantErr string
	}{
		{name: "defaults", loaded: 1000, eval: 500},
		{name: "flags", args: []string{"--max-loaded-scripts", "7", "--max-eval-scripts", "9"}, loaded: 7, eval: 9},
		{name: "environment", env: map[string]string{"LOCKNODE_MAX_LOADED_SCRIPTS": "3", "LOCKNODE_MAX_EVAL_SCRIPTS": "4"}, loaded: 3, eval: 4},
		{name: "a flag wins over the environment", env: map[string]string{"LOCKNODE_MAX_EVAL_SCRIPTS": "4"},
			args: []string{"--max-eval-scripts", "5"}, loaded: 1000, eval: 5},
		{name: "zero", args: []string{"--max-loaded-scripts", "0"}, wantErr: "--max-loaded-scripts"},
		{name: "negative", args: []string{"--max-eval-scripts", "-1"}, wantErr: "--max-eval-scripts"},
		{name: "not a number", env: map[string]string{"LOCKNODE_MAX_EVAL_SCRIPTS": "many"}, wantErr: `"many"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			f := addScriptFlags(fs)
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			var cfg fsm.Config
			err := f.apply(&cfg)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || cfg.MaxLoadedScripts != c.loaded || cfg.MaxEvalScripts != c.eval {
				t.Fatalf("%d %d %v, want %d %d", cfg.MaxLoadedScripts, cfg.MaxEvalScripts, err, c.loaded, c.eval)
			}
		})
	}
	// serve and dev refuse a bad value before they start anything.
	for _, cmd := range []string{"serve", "dev"} {
		data := filepath.Join(t.TempDir(), "data")
		args := []string{"--data", data, "--max-loaded-scripts", "0"}
		if cmd == "serve" {
			args = append(args, "--id", "n1", "--raft-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0", "--bootstrap")
		}
		var stderr bytes.Buffer
		if code := commands[cmd].run(context.Background(), args, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "--max-loaded-scripts") {
			t.Fatalf("%s: exit %d, stderr %q", cmd, code, stderr.String())
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Fatalf("%s: data directory created: %v", cmd, err)
		}
	}
}
