// Command release packs the kubectl-ome binaries that `make release` cross-compiled into one
// archive per platform, writes SHA256SUMS for the archives and the packaged chart, and the krew
// plugin manifest plugins/ome.yaml whose platforms download those archives:
//
//	go run ./hack/release -dist bin/release -version v1.3.0 -url https://…/releases/download/v1.3.0
//
// The binaries are read from DIST/kubectl-ome-OS-ARCH/kubectl-ome. The archives are
// reproducible: fixed modes, owners and times, so the same binaries give the same checksums.
package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"
	"time"
)

//go:embed ome.yaml.tmpl
var manifestTemplate string

type platform struct {
	OS, Arch, URI, SHA256 string
}

func main() {
	dist := flag.String("dist", "bin/release", "the release directory")
	version := flag.String("version", "", "the release, with its leading v")
	url := flag.String("url", "", "where the archives are downloaded from (the release's download URL)")
	platforms := flag.String("platforms", "linux/amd64 linux/arm64 darwin/amd64 darwin/arm64", "OS/ARCH list")
	license := flag.String("license", "LICENSE", "the license file shipped in every archive")
	flag.Parse()
	if *version == "" || *url == "" {
		fail(fmt.Errorf("-version and -url are required"))
	}
	if err := run(*dist, *version, strings.TrimSuffix(*url, "/"), strings.Fields(*platforms), *license); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "release:", err)
	os.Exit(1)
}

func run(dist, version, url string, platforms []string, license string) error {
	sums := map[string]string{}
	var plats []platform
	for _, p := range platforms {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok {
			return fmt.Errorf("platform %q is not OS/ARCH", p)
		}
		name := fmt.Sprintf("kubectl-ome_%s_%s_%s.tar.gz", version, goos, goarch)
		bin := filepath.Join(dist, "kubectl-ome-"+goos+"-"+goarch, "kubectl-ome")
		if err := writeArchive(filepath.Join(dist, name), map[string]string{"kubectl-ome": bin, "LICENSE": license}); err != nil {
			return err
		}
		sum, err := fileSHA256(filepath.Join(dist, name))
		if err != nil {
			return err
		}
		sums[name] = sum
		plats = append(plats, platform{OS: goos, Arch: goarch, URI: url + "/" + name, SHA256: sum})
	}
	charts, _ := filepath.Glob(filepath.Join(dist, "ome-scheduler-*.tgz"))
	for _, c := range charts {
		sum, err := fileSHA256(c)
		if err != nil {
			return err
		}
		sums[filepath.Base(c)] = sum
	}
	if err := writeSums(filepath.Join(dist, "SHA256SUMS"), sums); err != nil {
		return err
	}
	return writeManifest(filepath.Join(dist, "plugins", "ome.yaml"), version, plats)
}

// writeArchive writes a gzipped tar of files (name in the archive → path on disk), in name
// order, executables 0755 and other files 0644, owned by root, dated 1970-01-01.
func writeArchive(path string, files map[string]string) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	defer out.Close()
	gz := gzip.NewWriter(out)
	tw := tar.NewWriter(gz)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := os.ReadFile(files[n])
		if err != nil {
			return err
		}
		mode := int64(0o644)
		if n == "kubectl-ome" {
			mode = 0o755
		}
		hdr := &tar.Header{Name: n, Mode: mode, Size: int64(len(b)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return out.Close()
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeSums writes the sha256sum format: `sha256sum -c SHA256SUMS` checks the files.
func writeSums(path string, sums map[string]string) error {
	names := make([]string, 0, len(sums))
	for n := range sums {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s  %s\n", sums[n], n)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func writeManifest(path, version string, plats []platform) error {
	tmpl, err := template.New("ome.yaml").Parse(manifestTemplate)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, struct {
		Version   string
		Platforms []platform
	}{version, plats}); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
