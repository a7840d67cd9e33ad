package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// releasePlatforms are the image's platforms, as make release builds them by default, and the
// kubectl-ome builds of the test's release: the default's macOS builds would compile every
// package twice more (about 8 minutes each on 2 cores); test/chart's TestMakeRelease checks that
// make release builds all four by default.
var releasePlatforms = []string{"linux/amd64", "linux/arm64"}

// TestRelease runs docs/install.md's release commands as written against a CNCF distribution
// registry on loopback (registry.example.com replaced by its 127.0.0.1:PORT): `make release`
// with a cosign key made for the test and no transparency log (COSIGN_TLOG=false; the
// verification commands get --insecure-ignore-tlog=true), on a stand-in for the distroless base
// pinned by digest. Then it checks what a user pulls: the two-platform image and the chart under
// the references the release wrote, their signatures (cosign verify; a different key fails), the
// image's SPDX SBOM, SHA256SUMS, the krew manifest (installed with bin/krew from an archive),
// the top-level Dockerfile against the pushed image's config, and the image's binary run the way
// a container runtime runs it (TestRelease/RunImage).
func TestRelease(t *testing.T) {
	inst := loadGuide(t, filepath.Join(repoRoot(t), "docs", "install.md"))
	inst.withRegistry = true
	reg := startRegistry(t)
	s := newGuideShell(t, cp.KubeConfigPath)
	s.subst["registry.example.com"] = reg.host
	s.subst["cosign verify --key cosign.pub"] = "cosign verify --key cosign.pub --insecure-ignore-tlog=true"
	s.env = append(s.env, "SSL_CERT_FILE="+reg.caFile, "COSIGN_PASSWORD=", "COSIGN_TLOG=false",
		"PLUGIN_PLATFORMS="+strings.Join(releasePlatforms, " "))
	base := reg.pushBaseImage(t, s, releasePlatforms)
	baseDigest := strings.TrimSpace(shOK(t, s, "crane digest "+base))
	pinnedBase := base + "@" + baseDigest
	s.env = append(s.env, "BASE_IMAGE="+pinnedBase)
	shOK(t, s, "cosign generate-key-pair")

	version := strings.TrimSpace(readFile(t, filepath.Join(repoRoot(t), "VERSION")))
	image := reg.host + "/ome/ome-scheduler:v" + version
	chart := reg.host + "/charts/ome-scheduler:" + version
	start := time.Now()
	out := inst.run(t, s, "release")
	t.Logf("make release took %s", time.Since(start).Round(time.Second))
	dist := filepath.Join(s.dir, "bin", "release")
	for _, f := range []string{"image-ref", "chart-ref", "SHA256SUMS", "ome-scheduler-" + version + ".tgz"} {
		wantIn(t, "ls bin/release", out[1], f)
	}
	imageRef := checkRef(t, s, filepath.Join(dist, "image-ref"), image)
	checkRef(t, s, filepath.Join(dist, "chart-ref"), chart)
	checkImageIndex(t, s, image, pinnedBase, baseDigest)

	out = inst.run(t, s, "release-verify")
	for i, ref := range []string{image, chart} {
		wantIn(t, "cosign verify "+ref, out[i], "The signatures were verified against the specified public key")
	}
	checkSBOM(t, filepath.Join(s.dir, "ome-scheduler.spdx.json"))
	for _, a := range releaseArchives(version) {
		wantIn(t, "sha256sum -c SHA256SUMS", out[3], a+": OK")
	}
	shOK(t, s, "cosign generate-key-pair --output-key-prefix other")
	for _, ref := range []string{image, chart} {
		if o, err := s.sh(t, "cosign verify --key other.pub --insecure-ignore-tlog=true "+ref, time.Minute); err == nil {
			t.Errorf("cosign verify with a key that did not sign %s succeeded:\n%s", ref, o)
		}
	}
	checkKrewManifest(t, dist, version)
	installWithKrew(t, inst, s)

	t.Run("Dockerfile", func(t *testing.T) { checkDockerfile(t, s, imageRef, pinnedBase) })
	t.Run("RunImage", func(t *testing.T) { runImage(t, s, imageRef, version) })
}

func releaseArchives(version string) []string {
	var out []string
	for _, p := range releasePlatforms {
		out = append(out, fmt.Sprintf("kubectl-ome_v%s_%s.tar.gz", version, strings.ReplaceAll(p, "/", "_")))
	}
	return out
}

// checkRef checks that the reference in file is the repository of tagged, by the digest the tag
// has in the registry, and returns it.
func checkRef(t *testing.T, s *guideShell, file, tagged string) string {
	t.Helper()
	ref := strings.TrimSpace(readFile(t, file))
	digest := strings.TrimSpace(shOK(t, s, "crane digest "+tagged))
	repo := tagged[:strings.LastIndex(tagged, ":")]
	if ref != repo+"@"+digest {
		t.Errorf("%s = %q, want %s@%s (the digest of %s)", filepath.Base(file), ref, repo, digest, tagged)
	}
	return ref
}

// checkImageIndex checks that the image is an index of releasePlatforms, each image of which
// records the pinned base it was built on (ko's org.opencontainers.image.base.* annotations).
func checkImageIndex(t *testing.T, s *guideShell, image, pinnedBase, baseDigest string) {
	t.Helper()
	var index struct {
		Manifests []struct {
			Platform struct{ OS, Architecture string }
		}
	}
	if err := json.Unmarshal([]byte(shOK(t, s, "crane manifest "+image)), &index); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range index.Manifests {
		got = append(got, m.Platform.OS+"/"+m.Platform.Architecture)
	}
	if strings.Join(got, ",") != strings.Join(releasePlatforms, ",") {
		t.Errorf("image index platforms %v, want %v", got, releasePlatforms)
	}
	var m struct{ Annotations map[string]string }
	if err := json.Unmarshal([]byte(shOK(t, s, "crane manifest --platform linux/"+runtime.GOARCH+" "+image)), &m); err != nil {
		t.Fatal(err)
	}
	// ko records the base by the digest it was pinned to, and the platform's image of it.
	platformBase := strings.TrimSpace(shOK(t, s, "crane digest --platform linux/"+runtime.GOARCH+" "+pinnedBase))
	repo := pinnedBase[:strings.LastIndex(pinnedBase[:strings.Index(pinnedBase, "@")], ":")]
	if a := m.Annotations; a["org.opencontainers.image.base.name"] != repo+"@"+baseDigest || a["org.opencontainers.image.base.digest"] != platformBase {
		t.Errorf("image annotations %v: want base.name %s@%s and base.digest %s (the pinned base)", a, repo, baseDigest, platformBase)
	}
}

// checkSBOM checks the SBOM cosign downloaded: SPDX, describing the scheduler's module and its
// Kubernetes dependency.
func checkSBOM(t *testing.T, path string) {
	t.Helper()
	b := readFile(t, path)
	var doc struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct {
			Name string `json:"name"`
		} `json:"packages"`
	}
	if err := json.Unmarshal([]byte(b), &doc); err != nil {
		t.Fatalf("the downloaded SBOM is not an SPDX JSON document: %v\n%.500s", err, b)
	}
	names := map[string]bool{}
	for _, p := range doc.Packages {
		names[p.Name] = true
	}
	if !strings.HasPrefix(doc.SPDXVersion, "SPDX-2") || !names["k8s.io/kubernetes"] {
		t.Errorf("SBOM: version %q, packages %v: want SPDX 2 listing k8s.io/kubernetes", doc.SPDXVersion, names)
	}
}

// krewPlugin is the part of sigs.k8s.io/krew's Plugin (v1alpha2) the release writes.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct{ Name string }
	Spec       struct {
		Version, Homepage, ShortDescription, Description string
		Platforms                                        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			}
			URI, SHA256, Bin string
			Files            []struct{ From, To string }
		}
	}
}

// checkKrewManifest checks plugins/ome.yaml: one platform per archive, selected by its os and
// arch, downloading it from RELEASE_URL, with its SHA-256.
func checkKrewManifest(t *testing.T, dist, version string) {
	t.Helper()
	var p krewPlugin
	if err := yaml.UnmarshalStrict([]byte(readFile(t, filepath.Join(dist, "plugins", "ome.yaml"))), &p); err != nil {
		t.Fatalf("plugins/ome.yaml: %v", err)
	}
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" || p.Metadata.Name != "ome" || p.Spec.Version != "v"+version {
		t.Errorf("plugins/ome.yaml: %s %s %s %s", p.APIVersion, p.Kind, p.Metadata.Name, p.Spec.Version)
	}
	want := map[string]bool{}
	for _, a := range releaseArchives(version) {
		want[a] = true
	}
	url := "https://github.com/moirai-internal/ome-scheduler/releases/download/v" + version + "/"
	for _, pl := range p.Spec.Platforms {
		name := fmt.Sprintf("kubectl-ome_v%s_%s_%s.tar.gz", version, pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"])
		b, err := os.ReadFile(filepath.Join(dist, name))
		sum := sha256.Sum256(b)
		if err != nil || pl.URI != url+name || pl.SHA256 != hex.EncodeToString(sum[:]) || pl.Bin != "kubectl-ome" || !want[name] {
			t.Errorf("krew platform %v: uri %s, sha256 %s, bin %s; want %s%s with sha256 %x (%v)", pl.Selector.MatchLabels, pl.URI, pl.SHA256, pl.Bin, url, name, sum, err)
		}
		delete(want, name)
	}
	if len(want) > 0 {
		t.Errorf("plugins/ome.yaml has no platform for %v", want)
	}
}

// installWithKrew runs the page's krew command with bin/krew as `kubectl krew` (a private
// KREW_ROOT), then the installed plugin as `kubectl ome`.
func installWithKrew(t *testing.T, inst *guide, s *guideShell) {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		inst.block(t, "krew").commands[0].ran = true
		t.Logf("krew install not run: the page installs the linux/amd64 archive")
		return
	}
	plugins := t.TempDir()
	krew, err := exec.LookPath(filepath.Join(s.dir, "bin", "krew"))
	if err != nil {
		t.Fatalf("bin/krew: %v", err)
	}
	if err := os.Symlink(krew, filepath.Join(plugins, "kubectl-krew")); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	saved := s.env
	defer func() { s.env = saved }()
	s.env = append(append([]string(nil), s.env...), "KREW_ROOT="+root,
		"PATH="+filepath.Join(root, "bin")+string(os.PathListSeparator)+plugins+string(os.PathListSeparator)+envValue(s.env, "PATH"))
	out := inst.run(t, s, "krew")
	wantIn(t, "kubectl krew install", out[0], `Installed plugin: ome`)
	wantIn(t, "kubectl ome --help", shOK(t, s, "kubectl ome --help"), "kubectl ome runs ome-scheduler's own planning")
}

// envValue returns the last value of key in env.
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
