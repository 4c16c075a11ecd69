package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

func TestLogFormat(t *testing.T) {
	cases := []struct {
		format  string
		wantErr bool
		check   func(string) bool
	}{
		{"text", false, func(s string) bool { return strings.Contains(s, "[INFO]  locknode: hello: k=v") }},
		{"json", false, func(s string) bool {
			var m map[string]any
			return json.Unmarshal([]byte(s), &m) == nil && m["@message"] == "hello" && m["k"] == "v" && m["@level"] == "info"
		}},
		{"xml", true, nil},
		{"", true, nil},
	}
	for _, tc := range cases {
		t.Run(tc.format, func(t *testing.T) {
			var b bytes.Buffer
			log, err := newFormattedLogger(&b, "info", tc.format)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "--log-format") {
					t.Fatalf("err = %v, want one naming --log-format", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			log.Info("hello", "k", "v")
			if !tc.check(strings.TrimSpace(b.String())) {
				t.Fatalf("output %q", b.String())
			}
		})
	}
}

func TestServeAndDevRejectAnUnknownLogFormat(t *testing.T) {
	for name, run := range map[string]func(context.Context, []string, io.Writer, io.Writer) int{"serve": runServe, "dev": runDev} {
		var errb syncBuffer
		if code := run(context.Background(), []string{"--log-format", "xml"}, io.Discard, &errb); code != 2 || !strings.Contains(errb.String(), "--log-format") {
			t.Errorf("%s: code %d, stderr %s", name, code, errb.String())
		}
	}
	t.Setenv("LOCKNODE_LOG_FORMAT", "yaml")
	var errb syncBuffer
	if code := runServe(context.Background(), nil, io.Discard, &errb); code != 2 || !strings.Contains(errb.String(), `"yaml"`) {
		t.Errorf("env: code %d, stderr %s", code, errb.String())
	}
}

// Every line a running node logs is one JSON object.
func TestServeLogsJSON(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var logs syncBuffer
	code := make(chan int, 1)
	go func() { // ends when ctx is cancelled (runServe returns)
		c := runServe(ctx, []string{"--id", "n1", "--data", t.TempDir(), "--bootstrap", "--log-format", "json",
			"--raft-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--resp-addr", "127.0.0.1:0"}, pw, &logs)
		pw.Close()
		code <- c
	}()
	line, err := readLine(pr)
	go io.Copy(io.Discard, pr) // ends when runServe closes pw
	cancel()
	if c := <-code; c != 0 || err != nil || !strings.HasPrefix(line, "node n1 ") {
		t.Fatalf("serve: code %d, first line %q %v; log:\n%s", c, line, err, logs.String())
	}
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil || m["@message"] == nil {
			t.Fatalf("not a JSON log line: %q", l)
		}
		n++
	}
	if n < 2 {
		t.Fatalf("only %d log lines", n)
	}
}
