package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// scrape returns a node's /metrics text.
func scrape(t *testing.T, httpAddr string) string {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("metrics: %d %v", resp.StatusCode, err)
	}
	return string(b)
}

// resp sends one inline command and returns its reply line.
func respLine(t *testing.T, addr, cmd string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// TestMetricsExported drives each front end and checks that the metrics
// operators ask for first are served with what happened, and that every
// metric the Grafana dashboard queries exists.
func TestMetricsExported(t *testing.T) {
	lines, stop := startDev(t, "--nodes", "3", "--data", t.TempDir())
	defer stop()
	n1 := lines[0]

	body := `{"key":"metrics/k","owner":"o","ttl_ms":60000}`
	resp, err := http.Post("http://"+n1[2]+"/v1/locks/try", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("try: %d", resp.StatusCode)
	}
	rel, err := http.Post("http://"+n1[2]+"/v1/locks/release", "application/json", strings.NewReader(`{"key":"metrics/k","owner":"o"}`))
	if err != nil {
		t.Fatal(err)
	}
	rel.Body.Close()
	if rel.StatusCode != 200 {
		t.Fatalf("release: %d", rel.StatusCode)
	}
	if r, err := http.Get("http://" + n1[2] + "/v1/locks/metrics/k"); err != nil {
		t.Fatal(err)
	} else {
		r.Body.Close()
	}
	if got := respLine(t, n1[3], "SET metrics/s v NX PX 60000"); got != "+OK\r\n" {
		t.Fatalf("SET: %q", got)
	}
	if got := respLine(t, n1[3], "NOSUCHCOMMAND x"); !strings.HasPrefix(got, "-ERR unknown command") {
		t.Fatalf("unknown command: %q", got)
	}
	if got := respLine(t, n1[3], "LPUSH metrics/s x"); !strings.HasPrefix(got, "-WRONGTYPE") {
		t.Fatalf("LPUSH on a string: %q", got)
	}

	want := []*regexp.Regexp{
		regexp.MustCompile(`(?m)^locknode_http_requests_total\{code="200",route="POST /v1/locks/try"\} 1$`),
		regexp.MustCompile(`(?m)^locknode_http_requests_total\{code="(200|404)",route="GET /v1/locks/\{key\.\.\.\}"\} 1$`),
		regexp.MustCompile(`(?m)^locknode_http_request_duration_seconds_count\{route="POST /v1/locks/try"\} 1$`),
		regexp.MustCompile(`(?m)^locknode_resp_commands_total\{command="set"\} 1$`),
		regexp.MustCompile(`(?m)^locknode_resp_commands_total\{command="unknown"\} 1$`),
		regexp.MustCompile(`(?m)^locknode_resp_errors_total\{code="ERR"\} 1$`),
		regexp.MustCompile(`(?m)^locknode_resp_errors_total\{code="WRONGTYPE"\} 1$`),
		regexp.MustCompile(`(?m)^locknode_log_store_seconds_count [1-9]`),
		regexp.MustCompile(`(?m)^locknode_lock_hold_seconds_count 1$`),
	}
	var all strings.Builder
	var text string
	waitUntil(t, "the metrics of n1", func() bool {
		text = scrape(t, n1[2])
		for _, re := range want {
			if !re.MatchString(text) {
				return false
			}
		}
		return true
	})
	all.WriteString(text)
	for _, l := range lines[1:] {
		all.WriteString(scrape(t, l[2]))
	}
	// raft's own metrics are process-wide (dev: on one node); the leader
	// reports its commit time once it has committed something.
	var merged string
	waitUntil(t, "raft's own metrics", func() bool {
		merged = all.String()
		for _, l := range lines {
			merged += scrape(t, l[2])
		}
		return strings.Contains(merged, "\nlocknode_raft_commitTime")
	})

	// Every metric the dashboard queries is served.
	raw, err := os.ReadFile("../../deploy/grafana/locknode.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	name := regexp.MustCompile(`\blocknode_[A-Za-z_]+|\bgo_[a-z_]+`)
	exprs := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs++
			for _, m := range name.FindAllString(tg.Expr, -1) {
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_count"), "_sum")
				if !strings.Contains(merged, "\n"+base) {
					t.Errorf("panel %q queries %s, which no node serves", p.Title, m)
				}
			}
		}
	}
	if exprs < 15 {
		t.Fatalf("dashboard has %d queries", exprs)
	}
}
