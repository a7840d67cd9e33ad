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

// githubAnchor is the fragment GitHub gives a Markdown heading: lower case, characters other
// than letters, digits, spaces, "-" and "_" dropped, spaces turned into "-".
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

var mdHeading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)

// Every alert's runbook_url points at a section of docs/operations.md: its fragment is the
// anchor of a heading there, and that section names the alert and says what to check.
func TestAlertRunbookAnchors(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	sections := map[string]string{}
	locs := mdHeading.FindAllStringSubmatchIndex(text, -1)
	for i, l := range locs {
		end := len(text)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		sections[githubAnchor(text[l[2]:l[3]])] = text[l[1]:end]
	}
	_, rules := alertRules(t, render(t, "--set", "scheduler.metrics.prometheusRule.enabled=true"), "ome-scheduler")
	for name, rule := range rules {
		url, _ := dig(rule, "annotations", "runbook_url").(string)
		base, anchor, ok := strings.Cut(url, "#")
		if !ok || !strings.HasSuffix(base, "docs/operations.md") {
			t.Errorf("%s: runbook_url %q is not an anchor of docs/operations.md", name, url)
			continue
		}
		body, ok := sections[anchor]
		if !ok {
			t.Errorf("%s: docs/operations.md has no heading with anchor #%s", name, anchor)
			continue
		}
		if len(strings.TrimSpace(body)) < 200 {
			t.Errorf("%s: section #%s says too little: %q", name, anchor, body)
		}
	}
}
