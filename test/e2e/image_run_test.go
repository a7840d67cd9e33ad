package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// imageConfig is the part of an OCI image's config a container runtime runs it with.
type imageConfig struct {
	Entrypoint []string          `json:"Entrypoint"`
	Cmd        []string          `json:"Cmd"`
	User       string            `json:"User"`
	WorkingDir string            `json:"WorkingDir"`
	Env        []string          `json:"Env"`
	Labels     map[string]string `json:"Labels"`
}

func craneConfig(t *testing.T, s *guideShell, ref string) imageConfig {
	t.Helper()
	var c struct {
		Config imageConfig `json:"config"`
	}
	if err := json.Unmarshal([]byte(shOK(t, s, "crane config --platform linux/"+runtime.GOARCH+" "+ref)), &c); err != nil {
		t.Fatal(err)
	}
	return c.Config
}

// checkDockerfile compares the top-level Dockerfile, as BuildKit's parser reads it
// (test/dockerfile, its own module), built on the release's base, with the config of the
// image ko pushed: the same entrypoint, user, working directory, environment (the base's with
// the Dockerfile's ENV) and labels.
func checkDockerfile(t *testing.T, s *guideShell, imageRef, pinnedBase string) {
	cmd := exec.Command("go", "run", "./cmd/dockerfile-config", "-build-arg", "BASE_IMAGE="+pinnedBase, "../../Dockerfile")
	cmd.Dir = filepath.Join(repoRoot(t), "test", "dockerfile")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run ./test/dockerfile/cmd/dockerfile-config: %v\n%s", err, out)
	}
	var df struct {
		Base       string            `json:"base"`
		Entrypoint []string          `json:"entrypoint"`
		User       string            `json:"user"`
		WorkingDir string            `json:"workingDir"`
		Env        []string          `json:"env"`
		Labels     map[string]string `json:"labels"`
	}
	if err := json.Unmarshal(out, &df); err != nil {
		t.Fatal(err)
	}
	baseCfg, ko := craneConfig(t, s, df.Base), craneConfig(t, s, imageRef)
	want := imageConfig{Entrypoint: df.Entrypoint, User: df.User, WorkingDir: df.WorkingDir, Labels: df.Labels, Env: mergeEnv(baseCfg.Env, df.Env)}
	if want.WorkingDir == "" {
		want.WorkingDir = baseCfg.WorkingDir
	}
	if len(want.Labels) == 0 {
		want.Labels = baseCfg.Labels
	}
	slices.Sort(want.Env)
	slices.Sort(ko.Env)
	ko.Cmd = nil
	wj, _ := json.Marshal(want)
	kj, _ := json.Marshal(ko)
	if !bytes.Equal(wj, kj) {
		t.Errorf("the Dockerfile's image differs from ko's:\nDockerfile: %s\nko:         %s", wj, kj)
	}
}

// mergeEnv is base's KEY=VALUE list with set's values replacing or adding keys.
func mergeEnv(base, set []string) []string {
	m := map[string]string{}
	for _, kv := range append(append([]string(nil), base...), set...) {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

// runImage runs the pushed image's binary the way a container runtime would: the rootfs
// exported by crane and made read-only, the config's entrypoint, environment, working
// directory and user (as root: chrooted into the rootfs as that uid and gid; otherwise the
// rootfs path as the current user). First --version, then a real start as the chart's
// Deployment runs it: the chart's config.yaml and a token of its ServiceAccount where the pod
// would mount them, against the package's API server, until /healthz and /readyz answer ok.
func runImage(t *testing.T, s *guideShell, imageRef, version string) {
	cfg := craneConfig(t, s, imageRef)
	if len(cfg.Entrypoint) != 1 || cfg.User == "" {
		t.Fatalf("image config: entrypoint %v, user %q", cfg.Entrypoint, cfg.User)
	}
	rootfs, mount := imageRootfs(t, s, imageRef)
	run := containerCommand(t, rootfs, cfg)

	v, err := run("--version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(v)) != fmt.Sprintf("ome-scheduler v%s (Kubernetes v1.35.4)", version) {
		t.Errorf("%s --version in the image: %q (%v), want ome-scheduler v%s (Kubernetes v1.35.4)", cfg.Entrypoint[0], v, err, version)
	}
	port, err := devenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := run("--config="+mount+"/config.yaml", "--v=2", "--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
		"--authentication-kubeconfig="+mount+"/kubeconfig", "--authorization-kubeconfig="+mount+"/kubeconfig")
	logPath := filepath.Join(t.TempDir(), "ome-scheduler.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // its self-signed serving certificate
	for _, path := range []string{"/healthz", "/readyz"} {
		ok := waitFor(context.Background(), 60*time.Second, func(ctx context.Context) bool {
			resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d%s", port, path))
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		if !ok {
			t.Fatalf("the image's scheduler did not answer %s with 200 within 60s; log:\n%s", path, logTail(logPath, 30))
		}
	}
	if os.Geteuid() == 0 {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		if err != nil || !regexp.MustCompile(`(?m)^Uid:\s+`+uidOf(cfg.User)+`\s`).Match(status) {
			t.Errorf("the image's scheduler does not run as the image's user %s: %v\n%s", cfg.User, err, status)
		}
	}
	if !strings.Contains(readFile(t, logPath), "Attempting to acquire leader lease") {
		t.Errorf("the image's scheduler did not take part in leader election; log:\n%s", logTail(logPath, 30))
	}
}

// imageRootfs exports the image's rootfs for this machine's platform into a directory, adds
// the chart's config.yaml and a kubeconfig with a token of the chart's ServiceAccount under
// mount (where the pod mounts its ConfigMap), and makes it read-only.
func imageRootfs(t *testing.T, s *guideShell, imageRef string) (rootfs, mount string) {
	t.Helper()
	rootfs = t.TempDir()
	shOK(t, s, fmt.Sprintf("crane export --platform linux/%s %s - | tar -x -C %s", runtime.GOARCH, imageRef, rootfs))
	sched := ensureChartScheduler(t)
	// The package's chart scheduler leads; the image's joins the election as a standby, so the
	// other tests keep their leader.
	if !waitFor(context.Background(), 30*time.Second, func(ctx context.Context) bool {
		l, err := cp.Client.CoordinationV1().Leases(releaseNS).Get(ctx, releaseName, metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != ""
	}) {
		t.Fatalf("the chart scheduler holds no Lease %s/%s", releaseNS, releaseName)
	}
	mount = "/etc/kubernetes/ome-scheduler"
	full, err := devenv.WithKubeconfig(sched.config, mount+"/kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(rootfs, mount), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTokenKubeconfig(t, filepath.Join(rootfs, mount, "kubeconfig"), sched.token)
	if err := os.WriteFile(filepath.Join(rootfs, mount, "config.yaml"), full, 0o644); err != nil {
		t.Fatal(err)
	}
	// Readable by the image's user, writable by nobody.
	if out, err := exec.Command("chmod", "-R", "a+rX,a-w", rootfs).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("chmod", "-R", "u+w", rootfs).Run() })
	return rootfs, mount
}

func uidOf(user string) string {
	uid, _, _ := strings.Cut(user, ":")
	return uid
}

// containerCommand returns a constructor of commands that run the image's entrypoint in rootfs
// with the config's environment, working directory and user.
func containerCommand(t *testing.T, rootfs string, cfg imageConfig) func(args ...string) *exec.Cmd {
	t.Helper()
	uidS, gidS, _ := strings.Cut(cfg.User, ":")
	uid, err1 := strconv.ParseUint(uidS, 10, 32)
	gid, err2 := strconv.ParseUint(gidS, 10, 32)
	if err1 != nil || err2 != nil {
		t.Fatalf("image user %q is not numeric uid:gid", cfg.User)
	}
	dir := cfg.WorkingDir
	if dir == "" {
		dir = "/"
	}
	asRoot := os.Geteuid() == 0
	if !asRoot {
		t.Logf("not root: running %s from the rootfs as uid %d, without chroot", cfg.Entrypoint[0], os.Geteuid())
	}
	return func(args ...string) *exec.Cmd {
		args = append(append([]string(nil), cfg.Cmd...), args...)
		if !asRoot {
			cmd := exec.Command(filepath.Join(rootfs, cfg.Entrypoint[0]), args...)
			cmd.Env, cmd.Dir = cfg.Env, filepath.Join(rootfs, dir)
			return cmd
		}
		cmd := exec.Command(cfg.Entrypoint[0], args...)
		cmd.Env, cmd.Dir = cfg.Env, dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: rootfs, Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		return cmd
	}
}
