package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// A guide is a Markdown page whose fenced blocks are run by a test: docs/install.md. Every
// fenced block is preceded by an HTML comment `<!-- guide: NAME -->`. A `sh` block holds
// commands (one per line, `\` continues a line); a block of another language is a file the
// reader saves as NAME. A command that cannot run on the test machines ends in
// `# not run by the tests: <reason>`, and a command that needs an OCI registry ends in
// `# needs a registry`: only a guide whose test provides one (withRegistry) runs it. The test
// runs commands by block name and, at the end, checks that it ran every command and wrote every
// file of the page.
type guide struct {
	path   string
	blocks map[string]*guideBlock
	order  []string
	// withRegistry runs the commands marked `# needs a registry` (TestQuickstart).
	withRegistry bool
}

type guideBlock struct {
	name, lang string
	line       int // of the opening fence
	body       string
	commands   []guideCommand
}

type guideCommand struct {
	text     string // as written, continuation lines joined
	skip     string // the reason after "# not run by the tests: ", if any
	registry bool   // ends in "# needs a registry"
	ran      bool
}

var (
	guideMarker = regexp.MustCompile(`^\s*<!-- guide: (\S+) -->\s*$`)
	guideFence  = regexp.MustCompile("^(\\s*)```(\\S*)\\s*$")
	guideSkip   = regexp.MustCompile(`\s+# not run by the tests: (.+)$`)
	guideNeeds  = regexp.MustCompile(`\s+# needs a registry$`)
)

// guideSkipReasons are the only reasons a command of a guide may be left out.
var guideSkipReasons = map[string]bool{"needs a kubelet": true}

// loadGuide parses a guide; every fenced block must carry a unique marker.
func loadGuide(t *testing.T, path string) *guide {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g := &guide{path: path, blocks: map[string]*guideBlock{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	lineNo, pending := 0, ""
	var cur *guideBlock
	var indent string
	var body strings.Builder
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if cur != nil {
			if m := guideFence.FindStringSubmatch(line); m != nil && m[2] == "" {
				cur.body = body.String()
				g.finish(t, cur)
				cur = nil
				continue
			}
			body.WriteString(strings.TrimPrefix(line, indent) + "\n")
			continue
		}
		if m := guideMarker.FindStringSubmatch(line); m != nil {
			pending = m[1]
			continue
		}
		if m := guideFence.FindStringSubmatch(line); m != nil {
			if pending == "" {
				t.Fatalf("%s:%d: fenced block without a preceding <!-- guide: NAME --> marker", path, lineNo)
			}
			if _, dup := g.blocks[pending]; dup {
				t.Fatalf("%s:%d: second block named %q", path, lineNo, pending)
			}
			cur = &guideBlock{name: pending, lang: m[2], line: lineNo}
			indent = m[1]
			body.Reset()
			pending = ""
			continue
		}
		if strings.TrimSpace(line) != "" && pending != "" {
			t.Fatalf("%s:%d: marker %q is not followed by a fenced block", path, lineNo-1, pending)
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: unterminated fenced block", path, cur.line)
	}
	return g
}

func (g *guide) finish(t *testing.T, b *guideBlock) {
	t.Helper()
	g.blocks[b.name] = b
	g.order = append(g.order, b.name)
	if b.lang != "sh" {
		return
	}
	var joined strings.Builder
	for _, l := range strings.Split(b.body, "\n") {
		trimmed := strings.TrimSpace(l)
		if joined.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			joined.WriteString(strings.TrimSuffix(l, "\\"))
			continue
		}
		joined.WriteString(l)
		c := guideCommand{text: joined.String()}
		joined.Reset()
		if m := guideSkip.FindStringSubmatch(c.text); m != nil {
			if !guideSkipReasons[m[1]] {
				t.Fatalf("%s:%d: block %s: unknown reason for not running a command: %q", g.path, b.line, b.name, m[1])
			}
			c.skip = m[1]
		}
		if guideNeeds.MatchString(c.text) {
			c.skip, c.registry = "needs a registry", true
		}
		b.commands = append(b.commands, c)
	}
	if joined.Len() > 0 {
		t.Fatalf("%s:%d: block %s ends in a continuation line", g.path, b.line, b.name)
	}
	if len(b.commands) == 0 {
		t.Fatalf("%s:%d: block %s has no command", g.path, b.line, b.name)
	}
}

func (g *guide) block(t *testing.T, name string) *guideBlock {
	t.Helper()
	b, ok := g.blocks[name]
	if !ok {
		t.Fatalf("%s has no block named %q (blocks: %v)", g.path, name, g.order)
	}
	return b
}

// guideShell runs the commands of a guide the way a reader would: bash in a directory that
// looks like a clone of the repository, with bin/ first on PATH, KUBECONFIG set and helm's
// directories private to the test.
type guideShell struct {
	dir string
	env []string
	// subst rewrites a command before it runs (old -> new), e.g. a port number.
	subst map[string]string
}

// newGuideShell lays out dir: a symbolic link to every top-level entry of the repository
// (bin/ is devenv.BinDir), so that the guide's relative paths resolve and files it writes
// (my-values.yaml) stay out of the repository.
func newGuideShell(t *testing.T, kubeconfig string) *guideShell {
	t.Helper()
	root := repoRoot(t)
	bin, err := devenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == ".git" || e.Name() == "bin" {
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(bin, filepath.Join(dir, "bin")); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	// HOME is private to the test; the Go caches stay the machine's (under the private HOME they
	// would be empty, and `make image` would download and compile everything again).
	goEnv := goCacheEnv(t)
	env := []string{}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "KUBECONFIG", "MAKEFLAGS", "MAKELEVEL", "MFLAGS", "HELM_CONFIG_HOME", "HELM_CACHE_HOME", "HELM_DATA_HOME", "HOME", "GOCACHE", "GOMODCACHE", "GOPATH":
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+kubeconfig,
		"HOME="+home,
		"HELM_CONFIG_HOME="+filepath.Join(home, "helm-config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "helm-cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "helm-data"),
	)
	env = append(env, goEnv...)
	return &guideShell{dir: dir, env: env, subst: map[string]string{}}
}

// goCacheEnv returns GOCACHE, GOMODCACHE and GOPATH as the go command resolves them for this
// process.
func goCacheEnv(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	vals := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(vals) != 3 {
		t.Fatalf("go env GOCACHE GOMODCACHE GOPATH: %q", out)
	}
	return []string{"GOCACHE=" + vals[0], "GOMODCACHE=" + vals[1], "GOPATH=" + vals[2]}
}

// sh runs one command with bash -o pipefail and returns its combined output.
func (s *guideShell) sh(t *testing.T, command string, timeout time.Duration) (string, error) {
	t.Helper()
	for old, repl := range s.subst {
		command = strings.ReplaceAll(command, old, repl)
	}
	cmd := exec.Command("bash", "-o", "pipefail", "-c", command)
	cmd.Dir, cmd.Env = s.dir, s.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// A process group of its own, killed whole on timeout: a child (make's ko, a port-forward)
	// would otherwise keep the output pipe, and Wait, open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(timeout):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return out.String(), fmt.Errorf("timed out after %s", timeout)
	}
}

// run runs the commands i of block name (all when none is given), each of which must
// succeed, and returns their outputs.
func (g *guide) run(t *testing.T, s *guideShell, name string, idx ...int) []string {
	t.Helper()
	b := g.block(t, name)
	if b.lang != "sh" {
		t.Fatalf("block %s is a %q file, not commands", name, b.lang)
	}
	if len(idx) == 0 {
		for i := range b.commands {
			idx = append(idx, i)
		}
	}
	var outs []string
	for _, i := range idx {
		c := &b.commands[i]
		if c.skip != "" && !(c.registry && g.withRegistry) {
			c.ran = true
			t.Logf("[%s] not run (%s): %s", name, c.skip, c.text)
			outs = append(outs, "")
			continue
		}
		timeout := 5 * time.Minute
		if c.registry {
			timeout = 20 * time.Minute // builds the image: compiling takes long on a cold build cache
		}
		out, err := s.sh(t, c.text, timeout)
		c.ran = true
		t.Logf("[%s] $ %s\n%s", name, c.text, out)
		if err != nil {
			t.Fatalf("%s block %s, command %d failed: %v\n$ %s\n%s", filepath.Base(g.path), name, i+1, err, c.text, out)
		}
		outs = append(outs, out)
	}
	return outs
}

// runFailing runs command i of block name, which must fail, and returns its output.
func (g *guide) runFailing(t *testing.T, s *guideShell, name string, i int) string {
	t.Helper()
	c := g.block(t, name).commands[i]
	out, err := s.sh(t, c.text, 5*time.Minute)
	t.Logf("[%s] $ %s (expected to fail)\n%s", name, c.text, out)
	if err == nil {
		t.Fatalf("block %s, command %d succeeded, want a failure:\n$ %s\n%s", name, i+1, c.text, out)
	}
	return out
}

// write saves the file block name under its name in the shell's directory, with the shell's
// substitutions applied.
func (g *guide) write(t *testing.T, s *guideShell, name string) {
	t.Helper()
	b := g.block(t, name)
	if b.lang == "sh" {
		t.Fatalf("block %s holds commands, not a file", name)
	}
	body := b.body
	for old, repl := range s.subst {
		body = strings.ReplaceAll(body, old, repl)
	}
	if err := os.WriteFile(filepath.Join(s.dir, name), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	b.commands = []guideCommand{{text: "(file " + name + ")", ran: true}}
}

// checkAllRan fails the test for every command of the guide that was not run (or
// deliberately left out) and every file that was not written.
func (g *guide) checkAllRan(t *testing.T) {
	t.Helper()
	var missing []string
	for _, name := range g.order {
		b := g.blocks[name]
		if b.lang != "sh" && len(b.commands) == 0 {
			missing = append(missing, fmt.Sprintf("%s (file, line %d)", name, b.line))
		}
		for i, c := range b.commands {
			if !c.ran {
				missing = append(missing, fmt.Sprintf("%s #%d (line %d): %s", name, i+1, b.line, c.text))
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%s: not exercised by the test:\n%s", g.path, strings.Join(missing, "\n"))
	}
}
