package redisbridge

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/locknode/locknode/fsm"
)

func TestParseInfoSections(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []infoSection
	}{
		{"empty", "", nil},
		{"no header", "a:1\r\n", nil},
		{"one", "# Mirror\r\nmirror_running:1\r\nmirror_index:7\r\n",
			[]infoSection{{"Mirror", []string{"mirror_running:1", "mirror_index:7"}}}},
		{"two, LF, blank lines", "# A\na:1\n\n# B\n\nb:2\n",
			[]infoSection{{"A", []string{"a:1"}}, {"B", []string{"b:2"}}}},
		{"header only", "# Empty\r\n", []infoSection{{"Empty", nil}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := parseInfoSections(c.in); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// Config.ExtraInfo sections come after the built-in ones and answer to
// their own name.
func TestInfoExtraSections(t *testing.T) {
	s, _ := testServer(t, Config{ExtraInfo: func() string { return "# Mirror\r\nmirror_running:1\r\n" }})
	c := dialRaw(t, s)
	all := c.do("INFO").Str
	if !strings.HasSuffix(all, "\r\n# Mirror\r\nmirror_running:1\r\n\r\n") || !strings.Contains(all, "# Locknode\r\n") {
		t.Errorf("INFO = %q", all)
	}
	if got := c.do("INFO", "mirror").Str; got != "# Mirror\r\nmirror_running:1\r\n\r\n" {
		t.Errorf("INFO mirror = %q", got)
	}
	if got := c.do("INFO", "server").Str; strings.Contains(got, "Mirror") {
		t.Errorf("INFO server = %q", got)
	}
}

// INFO memory reports the key space's accounted size and limit under
// Redis' field names.
func TestInfoMemory(t *testing.T) {
	s, _ := testServer(t, Config{})
	c := dialRaw(t, s)
	c.do("SET", "k", strings.Repeat("v", 5000))
	got := c.do("INFO", "memory").Str
	fields := map[string]string{}
	for _, l := range strings.Split(got, "\r\n")[1:] {
		if k, v, ok := strings.Cut(l, ":"); ok {
			fields[k] = v
		}
	}
	used, err := strconv.ParseInt(fields["used_memory"], 10, 64)
	if !strings.HasPrefix(got, "# Memory\r\n") || err != nil || used < 5000 ||
		fields["maxmemory"] != strconv.FormatInt(fsm.DefaultConfig().MaxMemory, 10) ||
		fields["maxmemory_human"] != "1.00G" || fields["maxmemory_policy"] != "noeviction" {
		t.Errorf("INFO memory = %q", got)
	}
	if all := c.do("INFO").Str; !strings.Contains(all, "# Memory\r\nused_memory:") {
		t.Errorf("INFO = %q", all)
	}
}

func TestBytesToHuman(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "0B"}, {1023, "1023B"}, {1024, "1.00K"}, {939360, "917.34K"}, {1 << 20, "1.00M"}, {5 << 29, "2.50G"}} {
		if got := bytesToHuman(c.n); got != c.want {
			t.Errorf("bytesToHuman(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
