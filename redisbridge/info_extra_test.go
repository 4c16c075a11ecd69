package redisbridge

import (
	"reflect"
	"strings"
	"testing"
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
