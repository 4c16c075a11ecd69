package main

import (
	"testing"

	"github.com/locknode/locknode/fsm"
)

func TestParseMaxMemory(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"", 0, true},
		{"off", fsm.NoMaxMemory, true},
		{"0", fsm.NoMaxMemory, true},
		{"0MiB", fsm.NoMaxMemory, true},
		{"512MiB", 512 << 20, true},
		{"2GiB", 2 << 30, true},
		{"800MB", 800e6, true},
		{"4096", 4096, true},
		{"16 MiB", 16 << 20, true},
		{"75%", 0, false},
		{"-1", 0, false},
		{"12XB", 0, false},
		{"MiB", 0, false},
		{"99999999999TiB", 0, false},
	}
	for _, c := range cases {
		got, err := parseMaxMemory(c.in)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("parseMaxMemory(%q) = %d, %v; want %d ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}
