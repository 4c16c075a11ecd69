package main

import (
	"testing"

	"github.com/locknode/locknode/cluster"
)

func TestParseDataFreeWarn(t *testing.T) {
	for _, c := range []struct {
		in   string
		want cluster.DiskSpace
		ok   bool
	}{
		{"", cluster.DiskSpace{Percent: 5}, true},
		{"5%", cluster.DiskSpace{Percent: 5}, true},
		{"0.5%", cluster.DiskSpace{Percent: 0.5}, true},
		{"512MiB", cluster.DiskSpace{Bytes: 512 << 20}, true},
		{"2GB", cluster.DiskSpace{Bytes: 2e9}, true},
		{"off", cluster.DiskSpace{Off: true}, true},
		{"0", cluster.DiskSpace{Off: true}, true},
		{"100%", cluster.DiskSpace{}, false},
		{"-1%", cluster.DiskSpace{}, false},
		{"lots", cluster.DiskSpace{}, false},
		{"5 parsecs", cluster.DiskSpace{}, false},
	} {
		got, err := parseDataFreeWarn(c.in)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("parseDataFreeWarn(%q) = %+v, %v; want %+v ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
}
