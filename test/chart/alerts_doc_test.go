package chart_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// alertRow is a row of docs/operations.md's "What to look at when an alert fires" table.
var alertRow = regexp.MustCompile("^\\| `(OME[A-Za-z]+)` \\| (.+) \\|$")

// Every alert of the chart's PrometheusRule has a row, with what to check, in the alert table
// of docs/operations.md, and the table names no alert the chart does not define.
func TestOperationsAlertTable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "| Alert | First checks |")
	if start < 0 {
		t.Fatal(`docs/operations.md has no "| Alert | First checks |" table`)
	}
	var documented []string
	for _, line := range strings.Split(text[start:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		m := alertRow.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("alert table row does not read | `Alert` | checks |: %q", line)
			continue
		}
		if len(strings.TrimSpace(m[2])) < 40 {
			t.Errorf("alert %s: its row says too little: %q", m[1], m[2])
		}
		documented = append(documented, m[1])
	}
	_, rules := alertRules(t, render(t, "--set", "scheduler.metrics.prometheusRule.enabled=true"), "ome-scheduler")
	var defined []string
	for name := range rules {
		defined = append(defined, name)
	}
	sort.Strings(defined)
	sort.Strings(documented)
	wantEq(t, "alerts in docs/operations.md's alert table", strings.Join(documented, " "), strings.Join(defined, " "))
}
