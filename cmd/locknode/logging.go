package main

import (
	"fmt"
	"io"

	"github.com/hashicorp/go-hclog"
)

// logFormatUsage is the help of --log-format on serve and dev.
const logFormatUsage = "log format: text, or json (one object a line, for log collectors) (env LOCKNODE_LOG_FORMAT)"

func newLogger(w io.Writer, level string) (hclog.Logger, error) {
	return newFormattedLogger(w, level, "text")
}

// newFormattedLogger is newLogger with a --log-format.
func newFormattedLogger(w io.Writer, level, format string) (hclog.Logger, error) {
	opts, err := loggerOptions(w, level, format)
	if err != nil {
		return nil, err
	}
	return hclog.New(opts), nil
}

// loggerOptions are the options of newFormattedLogger.
func loggerOptions(w io.Writer, level, format string) (*hclog.LoggerOptions, error) {
	lv := hclog.LevelFromString(level)
	if lv == hclog.NoLevel {
		return nil, fmt.Errorf("unknown log level %q (trace, debug, info, warn, error, off)", level)
	}
	var asJSON bool
	switch format {
	case "text":
	case "json":
		asJSON = true
	default:
		return nil, fmt.Errorf("unknown --log-format %q (text, json)", format)
	}
	return &hclog.LoggerOptions{Name: "locknode", Level: lv, Output: w, JSONFormat: asJSON}, nil
}
