package devenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// RepoRoot returns the repository root (the directory holding go.mod), found by walking up
// from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && len(b) > 0 && isOurModule(b) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root (go.mod of ome-scheduler) not found above the working directory")
		}
		dir = parent
	}
}

func isOurModule(gomod []byte) bool {
	const m = "module github.com/moirai-internal/ome-scheduler\n"
	return len(gomod) >= len(m) && string(gomod[:len(m)]) == m
}

// BinDir returns where the tool binaries live: $OME_BIN_DIR, else <repo>/bin.
func BinDir() (string, error) {
	if d := os.Getenv("OME_BIN_DIR"); d != "" {
		return d, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin"), nil
}

// Bin returns the path of a tool binary and fails clearly when it has not been built; an
// absolute path is returned as it is when the file exists.
func Bin(name string) (string, error) {
	if filepath.IsAbs(name) {
		if _, err := os.Stat(name); err != nil {
			return "", err
		}
		return name, nil
	}
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found in %s: run `%s` first", name, dir, buildHint(name))
	}
	return p, nil
}

// buildHint is the make command that builds bin/<name>: make build for this repository's
// binaries, make bin/<name> for a tool.
func buildHint(name string) string {
	if name == "ome-scheduler" || name == "kubectl-ome" {
		return "make build"
	}
	return "make bin/" + name
}

// CRDFile is the PodGroup CRD shipped in manifests/ (copied from the scheduler-plugins module).
func CRDFile() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "manifests", "crds", "scheduling.x-k8s.io_podgroups.yaml"), nil
}

// ChartDir returns <repo>/charts/ome-scheduler.
func ChartDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "charts", "ome-scheduler"), nil
}
