package main

import (
	"fmt"
	"io"

	"github.com/hashicorp/go-hclog"
)

func newLogger(w io.Writer, level string) (hclog.Logger, error) {
	lv := hclog.LevelFromString(level)
	if lv == hclog.NoLevel {
		return nil, fmt.Errorf("unknown log level %q (trace, debug, info, warn, error, off)", level)
	}
	return hclog.New(&hclog.LoggerOptions{Name: "locknode", Level: lv, Output: w}), nil
}
