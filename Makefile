# ome-scheduler — kube-scheduler 1.35 with the OMEGangPack plugin.
#
#   make demo   local control plane, GPU nodes simulated by kwok, the demo gang placed and shown
#   make test   the CRD check, gofmt, go vet, then the unit (pkg/ with -race, fuzz seeds), chart
#               (test/chart), integration (test/integration), end-to-end (test/e2e) and
#               reliability (test/reliability) tests; builds the tools when missing

SHELL        := /bin/bash
comma        := ,
GO           ?= go
BIN          := $(CURDIR)/bin
export GOFLAGS := -buildvcs=false
export OME_BIN_DIR := $(BIN)

# The release version, the one place it lives: the chart's version (`make chart`), and with a
# leading v the chart's appVersion, the image tag (`make image`) and the version
# `ome-scheduler --version` prints. Chart.yaml carries the same values (test/chart checks it).
VERSION      := $(shell cat $(CURDIR)/VERSION)
HELM_VERSION := v3.22.0
KUBE_VERSION := v1.35.4
# Prometheus and promtool for the e2e scrape test and the alert rule unit tests. Built with
# Prometheus's remove_all_sd tag: the tests scrape static targets only, and leaving out the
# cloud and Kubernetes service discoveries (plugins/plugin_*.go) cut a cold build of both from
# about 9 minutes to about 3.
PROMETHEUS_VERSION := v0.316.0
PROMETHEUS_TAGS    := remove_all_sd
# ko builds the image (make image, make publish); the CNCF distribution registry and crane
# serve and inspect it in the e2e test of the published chart (test/e2e/quickstart_test.go).
KO_VERSION         := v0.19.1
REGISTRY_VERSION   := v3.1.2
CRANE_VERSION      := v0.22.1
# cosign signs and verifies the release's image and chart (make release, test/e2e/release_test.go).
COSIGN_VERSION     := v3.1.3
# krew installs kubectl-ome from the release's plugin manifest in the same test.
KREW_VERSION       := v0.4.3
# kwok simulates the kubelets of make demo's and the side-by-side runs' nodes (docs/benchmarks.md).
KWOK_VERSION := v0.8.0
# Stamp the Kubernetes version into the binaries built from the module proxy (a plain `go
# build` reports v0.0.0-master, which Helm's kubeVersion check and kubectl would see).
VERSION_PKG  := k8s.io/component-base/version
KUBE_LDFLAGS := -X $(VERSION_PKG).gitVersion=$(KUBE_VERSION) -X $(VERSION_PKG).gitMajor=1 \
                -X $(VERSION_PKG).gitMinor=35 -X $(VERSION_PKG).gitTreeState=clean \
                -X $(VERSION_PKG).buildDate=1970-01-01T00:00:00Z
# ome-scheduler's own version, next to the Kubernetes one (cmd/ome-scheduler prints both); `make
# image` (ko) stamps the same two.
OME_LDFLAGS  := -X github.com/moirai-internal/ome-scheduler/internal/version.Version=v$(VERSION)
CRD_SRC       = $(shell $(GO) list -m -f '{{.Dir}}' sigs.k8s.io/scheduler-plugins)/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml
CRD           := manifests/crds/scheduling.x-k8s.io_podgroups.yaml
# The chart's copy: Helm installs it from crds/ on the first install when it is absent.
CHART_CRD     := charts/ome-scheduler/crds/scheduling.x-k8s.io_podgroups.yaml
# The copies are the module's file with two annotations added after the line "  annotations:"
# of its metadata: Argo CD neither prunes the CRD nor deletes it with the Application (with it,
# every PodGroup would go), and Helm keeps it should it ever be managed as a release object.
CRD_ANNOTATE  = awk '{ print } /^  annotations:$$/ && !done { \
  print "    argocd.argoproj.io/sync-options: Prune=false,Delete=false"; \
  print "    helm.sh/resource-policy: keep"; done = 1 }'

# The control plane, kwok and helm (all make demo needs), then Prometheus, ko, the registry
# crane, cosign and krew for the tests.
CLUSTER_TOOLS := $(BIN)/etcd $(BIN)/kube-apiserver $(BIN)/kube-controller-manager $(BIN)/kubectl $(BIN)/kwok $(BIN)/helm
TOOLS := $(CLUSTER_TOOLS) $(BIN)/prometheus $(BIN)/promtool $(BIN)/ko $(BIN)/registry $(BIN)/crane $(BIN)/cosign $(BIN)/krew
# What each test package starts (internal/devenv: etcd and kube-apiserver for every control
# plane, helm to render the chart's scheduler configuration), so that running one suite builds
# only its own tools. make test builds all of TOOLS.
TEST_PLANE_TOOLS       := $(BIN)/etcd $(BIN)/kube-apiserver $(BIN)/helm
# + kube-controller-manager (the DRA tests' resourceclaim controller) and kwok (kwok_test.go).
INTEGRATION_TOOLS      := $(TEST_PLANE_TOOLS) $(BIN)/kube-controller-manager $(BIN)/kwok
# + kube-controller-manager, kubectl (the install guide's commands), Prometheus and promtool,
# ko, the registry and crane (the published-install test), cosign and krew (the release test),
# kwok (the kubelet API the leader port-forward test reaches): every tool.
E2E_TOOLS              := $(TEST_PLANE_TOOLS) $(BIN)/kube-controller-manager $(BIN)/kubectl \
                          $(BIN)/prometheus $(BIN)/promtool $(BIN)/ko $(BIN)/registry $(BIN)/crane \
                          $(BIN)/cosign $(BIN)/krew $(BIN)/kwok
RELIABILITY_TOOLS      := $(TEST_PLANE_TOOLS)

GO_TEST_FLAGS ?=
INTEGRATION_TIMEOUT ?= 40m

.PHONY: all build tools demo test unit test-chart test-integration test-e2e test-reliability soak fuzz vuln vet fmt-check race crd crd-check image publish chart clean sidebyside

all: build

## help: every target with its description (the `## target:` comments of this Makefile)
.PHONY: help
help:
	@awk '/^## [a-z0-9-]+:/ { sub(/^## /, ""); n = index($$0, ":"); \
	  printf "%-17s %s\n", substr($$0, 1, n - 1), substr($$0, n + 2); next } \
	  /^## / { sub(/^## /, ""); printf "%-17s %s\n", "", $$0 }' $(MAKEFILE_LIST)

## build: bin/ome-scheduler (BUILD_TAGS=heapdump for memory investigations, docs/benchmarks.md),
## static and with -trimpath like the image's binary, so `make image` reuses its compiled packages;
## and bin/kubectl-ome, the kubectl plugin (copy it onto the PATH: `kubectl ome ...`)
BUILD_TAGS ?=
build:
	CGO_ENABLED=0 $(GO) build -trimpath -tags '$(BUILD_TAGS)' -ldflags "$(KUBE_LDFLAGS) $(OME_LDFLAGS)" -o $(BIN)/ome-scheduler ./cmd/ome-scheduler
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(KUBE_LDFLAGS) $(OME_LDFLAGS)" -o $(BIN)/kubectl-ome ./cmd/kubectl-ome

## tools: the real test components from the Go module proxy, cached in bin/; one of them alone
## with its relative name, e.g. make bin/helm (the tools are listed at the top of this file)
tools: $(TOOLS)

# The relative names (bin/helm) for the rules below, which are written with absolute ones.
$(patsubst $(BIN)/%,bin/%,$(TOOLS)): bin/%: $(BIN)/%

$(BIN)/etcd: hack/etcd/main.go hack/etcd/go.mod hack/etcd/go.sum
	cd hack/etcd && $(GO) build -o $@ .

$(BIN)/kube-apiserver: go.mod go.sum Makefile
	$(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $@ k8s.io/kubernetes/cmd/kube-apiserver

$(BIN)/kube-controller-manager: go.mod go.sum Makefile
	$(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $@ k8s.io/kubernetes/cmd/kube-controller-manager

$(BIN)/kubectl: go.mod go.sum Makefile
	$(GO) build -ldflags "$(KUBE_LDFLAGS)" -o $@ k8s.io/kubernetes/cmd/kubectl

$(BIN)/helm:
	GOBIN=$(BIN) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

# Built outside this module (go install pkg@version uses Prometheus's own go.mod).
$(BIN)/prometheus:
	GOBIN=$(BIN) $(GO) install -tags $(PROMETHEUS_TAGS) github.com/prometheus/prometheus/cmd/prometheus@$(PROMETHEUS_VERSION)

$(BIN)/promtool:
	GOBIN=$(BIN) $(GO) install -tags $(PROMETHEUS_TAGS) github.com/prometheus/prometheus/cmd/promtool@$(PROMETHEUS_VERSION)

$(BIN)/ko:
	GOBIN=$(BIN) $(GO) install github.com/google/ko@$(KO_VERSION)

$(BIN)/registry:
	GOBIN=$(BIN) $(GO) install github.com/distribution/distribution/v3/cmd/registry@$(REGISTRY_VERSION)

$(BIN)/crane:
	GOBIN=$(BIN) $(GO) install github.com/google/go-containerregistry/cmd/crane@$(CRANE_VERSION)

$(BIN)/cosign:
	GOBIN=$(BIN) $(GO) install github.com/sigstore/cosign/v3/cmd/cosign@$(COSIGN_VERSION)

$(BIN)/krew:
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/krew/cmd/krew@$(KREW_VERSION)

# Built outside this module too: kwok pins newer k8s.io modules than ours, so it never enters
# our go.mod.
$(BIN)/kwok:
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION)

## demo: a local control plane, GPU nodes simulated by kwok, the demo gang placed and shown (README)
demo: build $(CLUSTER_TOOLS)
	$(GO) run ./hack/demo

## test: everything CI runs
test: tools build crd-check fmt-check vet unit test-chart test-integration test-e2e test-reliability

## vet: go vet of the module and of hack/etcd
vet:
	$(GO) vet ./...
	cd hack/etcd && $(GO) vet ./...
	cd test/dockerfile && $(GO) vet ./...

## fmt-check: fails when a tracked Go file is not gofmt-formatted
fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## unit: pure logic and plugin unit tests, with the race detector, fuzz seed corpora included;
## then the composition test's COMPOSE_SEQUENCES random sequences without it (the race detector
## slows the simulator over tenfold, so under -race TestCompose plays only 50)
COMPOSE_SEQUENCES ?= 2000
unit:
	$(GO) test -race -count=1 $(GO_TEST_FLAGS) ./pkg/...
	OME_COMPOSE_SEQUENCES=$(COMPOSE_SEQUENCES) $(GO) test -count=1 -run '^TestCompose$$' $(GO_TEST_FLAGS) ./pkg/plugins/gangpack/
	$(GO) test -count=1 -run '^Test' $(GO_TEST_FLAGS) ./test/bench/... ./test/heapdump/... ./test/sidebyside/... ./hack/release/

## test-chart: the chart render tests (test/chart) with the real helm
test-chart: $(BIN)/helm
	$(GO) test -count=1 $(GO_TEST_FLAGS) ./test/chart/...
	cd test/dockerfile && $(GO) test -count=1 $(GO_TEST_FLAGS) ./...

## test-integration: behaviour on a real API server (test/integration), the scheduler in-process
test-integration: $(INTEGRATION_TOOLS)
	$(GO) test -count=1 -timeout $(INTEGRATION_TIMEOUT) $(GO_TEST_FLAGS) ./test/integration/...

## test-e2e: the real binary with the chart's configuration, RBAC and secure metrics; the
## published image and chart, the signed release (its linux/arm64 compile is cold on a fresh
## build cache: allow about 10 more minutes on 2 cores the first time)
test-e2e: $(E2E_TOOLS) build
	$(GO) test -count=1 -timeout 40m $(GO_TEST_FLAGS) ./test/e2e/...

## test-reliability: failover, restarts, API server outage, chaos (short), on real processes
test-reliability: $(RELIABILITY_TOOLS) build
	$(GO) test -count=1 -timeout 20m $(GO_TEST_FLAGS) ./test/reliability/...

## soak: the chaos scenario for SOAK_DURATION (default 20m, at most 30m), failing on any violation
SOAK_DURATION ?= 20m
soak: $(RELIABILITY_TOOLS) build
	OME_SOAK_DURATION=$(SOAK_DURATION) $(GO) test -count=1 -timeout 40m -run TestChaosDuringFormation -v ./test/reliability/

## soak-repair: the node-failure repair scenario for REPAIR_ROUNDS rounds (5 % of the nodes
## fail each round); soak-failover: FAILOVER_KILLS leader kills at random points of gang
## bursts. Both print their figures (docs/benchmarks.md, "Repair and failover"); a short
## variant of each runs in test-reliability.
REPAIR_ROUNDS  ?= 20
FAILOVER_KILLS ?= 20
.PHONY: soak-repair soak-failover
soak-repair: $(RELIABILITY_TOOLS) build
	OME_REPAIR_ROUNDS=$(REPAIR_ROUNDS) $(GO) test -count=1 -timeout 40m -run '^TestNodeFailureRepair$$' -v ./test/reliability/

soak-failover: $(RELIABILITY_TOOLS) build
	OME_FAILOVER_KILLS=$(FAILOVER_KILLS) $(GO) test -count=1 -timeout 40m -run '^TestLeaderKillsDuringBursts$$' -v ./test/reliability/

## fuzz: each fuzz target for FUZZTIME (make test runs their seed corpora only)
FUZZTIME ?= 1m
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzPlan$$' -fuzztime $(FUZZTIME) ./pkg/topology/
	$(GO) test -run '^$$' -fuzz '^FuzzBestFit$$' -fuzztime $(FUZZTIME) ./pkg/topology/
	$(GO) test -run '^$$' -fuzz '^FuzzAssign$$' -fuzztime $(FUZZTIME) ./pkg/topology/
	$(GO) test -run '^$$' -fuzz '^FuzzMinimalVictims$$' -fuzztime $(FUZZTIME) ./pkg/topology/
	$(GO) test -run '^$$' -fuzz '^FuzzGroupPreemption$$' -fuzztime $(FUZZTIME) ./pkg/topology/
	$(GO) test -run '^$$' -fuzz '^FuzzPlanGroup$$' -fuzztime $(FUZZTIME) ./pkg/topology/
	$(GO) test -run '^$$' -fuzz '^FuzzStore$$' -fuzztime $(FUZZTIME) ./pkg/placement/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeArgs$$' -fuzztime $(FUZZTIME) ./pkg/plugins/gangpack/
	$(GO) test -run '^$$' -fuzz '^FuzzPodGroupInterpretation$$' -fuzztime $(FUZZTIME) ./pkg/plugins/gangpack/
	$(GO) test -run '^$$' -fuzz '^FuzzHoldsHaveDeadlines$$' -fuzztime $(FUZZTIME) ./pkg/plugins/gangpack/
	$(GO) test -run '^$$' -fuzz '^FuzzPlanCacheMatchesScratch$$' -fuzztime $(FUZZTIME) ./pkg/plugins/gangpack/
	$(GO) test -run '^$$' -fuzz '^FuzzCompose$$' -fuzztime $(FUZZTIME) ./pkg/plugins/gangpack/

## vuln: govulncheck from the Go module proxy (needs the vulnerability database, which this
## network does not reach: run it where vuln.go.dev is reachable)
vuln:
	$(GO) run golang.org/x/vuln/cmd/govulncheck@v1.1.4 ./...

## crd: copy the PodGroup CRD from the pinned scheduler-plugins module (manifests/crds/ and
## the chart's crds/)
crd:
	@src=$(CRD_SRC); for f in $(CRD) $(CHART_CRD); do \
	  mkdir -p $$(dirname $$f) && $(CRD_ANNOTATE) $$src > $$f && chmod 0644 $$f && echo "$$f"; done

## crd-check: both copies are the module's CRD plus CRD_ANNOTATE's two annotations, byte for byte
crd-check:
	@src=$(CRD_SRC); for f in $(CRD) $(CHART_CRD); do \
	  $(CRD_ANNOTATE) $$src | cmp -s - $$f || { echo "$$f differs from the scheduler-plugins module's CRD plus its annotations: run make crd"; exit 1; }; done

## chart: the packaged chart bin/ome-scheduler-$(VERSION).tgz (version VERSION, appVersion
## vVERSION, the image tag; CHART_DIST changes the directory)
CHART_DIST ?= $(BIN)
chart: $(BIN)/helm
	@mkdir -p $(CHART_DIST)
	$(BIN)/helm package charts/ome-scheduler --version $(VERSION) --app-version v$(VERSION) --destination $(CHART_DIST)

## image: the multi-platform image ({HUB/}ome-scheduler:v$(VERSION), the reference the chart
## renders with global.hub=HUB) built with ko, without a Docker engine, on BASE_IMAGE (distroless
## static, run as 65532:65532) for PLATFORMS, its binary stamped like `make build`. Written as an
## OCI image layout to $(IMAGE_LAYOUT); nothing is pushed.
## publish: push the image to HUB and the packaged chart to CHART_REPO (oci://…, `helm push`),
## e.g. make publish HUB=registry.example.com/ome CHART_REPO=oci://registry.example.com/charts.
## Credentials come from `docker login`/`helm registry login` (~/.docker/config.json); a
## registry with a private CA needs SSL_CERT_FILE. See docs/install.md, section 2.
HUB          ?=
CHART_REPO   ?=
IMAGE_REPO    = $(if $(HUB),$(patsubst %/,%,$(HUB))/)ome-scheduler
PLATFORMS    ?= linux/amd64,linux/arm64
# Pinned by digest (the multi-platform index of the tag): a release is rebuilt on the same base.
# Refresh it with `crane digest gcr.io/distroless/static:nonroot`; the top-level Dockerfile
# pins the same one (test/dockerfile checks it).
BASE_IMAGE   ?= gcr.io/distroless/static:nonroot@sha256:e8a4044e0b4ae4257efa45fc026c0bc30ad320d43bd4c1a7d5271bd241e386d0
# Relative: ko names the layout's image after its path, which must be a valid (lowercase)
# repository name.
IMAGE_LAYOUT ?= bin/image
KO_BUILD      = KO_DOCKER_REPO=$(IMAGE_REPO) KO_DEFAULTBASEIMAGE=$(BASE_IMAGE) $(BIN)/ko build ./cmd/ome-scheduler \
                --bare --tags v$(VERSION) --platform $(PLATFORMS) --image-user 65532:65532 \
                --ldflags "-s -w $(KUBE_LDFLAGS) $(OME_LDFLAGS)"
image: $(BIN)/ko
	rm -rf $(IMAGE_LAYOUT)
	$(KO_BUILD) --push=false --oci-layout-path $(IMAGE_LAYOUT)

publish: $(BIN)/ko $(BIN)/helm
	@test -n "$(HUB)" -a -n "$(CHART_REPO)" || { echo "make publish needs HUB=registry/path and CHART_REPO=oci://registry/path"; exit 2; }
	$(KO_BUILD) --image-refs $(BIN)/image-ref
	$(MAKE) --no-print-directory chart
	$(BIN)/helm push $(CHART_DIST)/ome-scheduler-$(VERSION).tgz $(CHART_REPO)

## release: what a user pulls and verifies, in $(RELEASE_DIST) and pushed like `make publish`:
## the image with ko's SPDX SBOM attached (image-ref: the index's digest, signed with each
## platform's image; image-refs: ko's list) and the chart (chart-ref), signed with cosign: with
## the key COSIGN_KEY (its password in COSIGN_PASSWORD), or keyless when COSIGN_KEY is empty
## (the CI's OIDC identity, .github/workflows/release.yml); COSIGN_TLOG=false leaves the
## transparency log out (a network without it, the tests). Then kubectl-ome
## for PLUGIN_PLATFORMS, one kubectl-ome_vVERSION_OS_ARCH.tar.gz each, SHA256SUMS (the archives
## and the chart) and the krew manifest plugins/ome.yaml, whose archives download from
## RELEASE_URL. See docs/install.md, section 2.
RELEASE_DIST     ?= $(BIN)/release
RELEASE_URL      ?= https://github.com/moirai-internal/ome-scheduler/releases/download/v$(VERSION)
PLUGIN_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
COSIGN_KEY       ?=
COSIGN_TLOG      ?= true
COSIGN_SIGN       = $(BIN)/cosign sign --yes $(if $(COSIGN_KEY),--key $(COSIGN_KEY)) \
                    $(if $(filter false,$(COSIGN_TLOG)),--use-signing-config=false --tlog-upload=false)
CHART_PATH        = $(patsubst oci://%,%,$(patsubst %/,%,$(CHART_REPO)))/ome-scheduler
.PHONY: release
release: $(BIN)/ko $(BIN)/helm $(BIN)/crane $(BIN)/cosign
	@test -n "$(HUB)" -a -n "$(CHART_REPO)" || { echo "make release needs HUB=registry/path and CHART_REPO=oci://registry/path"; exit 2; }
	rm -rf $(RELEASE_DIST) && mkdir -p $(RELEASE_DIST)
	$(KO_BUILD) --sbom spdx --image-refs $(RELEASE_DIST)/image-refs
	echo "$(IMAGE_REPO)@$$($(BIN)/crane digest $(IMAGE_REPO):v$(VERSION))" > $(RELEASE_DIST)/image-ref
	$(BIN)/helm package charts/ome-scheduler --version $(VERSION) --app-version v$(VERSION) --destination $(RELEASE_DIST)
	$(BIN)/helm push $(RELEASE_DIST)/ome-scheduler-$(VERSION).tgz $(CHART_REPO)
	echo "$(CHART_PATH)@$$($(BIN)/crane digest $(CHART_PATH):$(VERSION))" > $(RELEASE_DIST)/chart-ref
	$(COSIGN_SIGN) --recursive $$(cat $(RELEASE_DIST)/image-ref)
	$(COSIGN_SIGN) $$(cat $(RELEASE_DIST)/chart-ref)
	@set -e; for p in $(PLUGIN_PLATFORMS); do os=$${p%/*}; arch=$${p#*/}; echo "kubectl-ome $$os/$$arch"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w $(KUBE_LDFLAGS) $(OME_LDFLAGS)" \
	    -o $(RELEASE_DIST)/kubectl-ome-$$os-$$arch/kubectl-ome ./cmd/kubectl-ome; done
	$(GO) run ./hack/release -dist $(RELEASE_DIST) -version v$(VERSION) -url $(RELEASE_URL) -platforms "$(PLUGIN_PLATFORMS)"

## clean: remove bin/ (the built tools too: the next make demo or make test builds them again)
clean:
	rm -rf $(BIN)

## sidebyside: bin/ome-scheduler with the chart's configuration against the same binary as a
## stock kube-scheduler and against "limit" (test/sidebyside/limitbinder: no filter or score,
## binds a precomputed placement as fast as the client allows), each a separate process on a
## fresh control plane (etcd and kube-apiserver processes), the whole backlog created before the
## scheduler starts: time until every pod is bound, pods/s and its share of limit's, CPU time,
## peak RSS (VmHWM), peak goroutines, API writes per pod, a heap profile per case. Sizes from
## SBS_NODES (512), SBS_GANG (4,8), SBS_RUNS (1), SBS_FILL, SBS_GPUS_PER_NODE, SBS_CLIQUE,
## SBS_KWOK (1: bin/kwok runs the nodes and pods; 0: nothing does); SBS_QPS (1000) and
## SBS_BURST (2×QPS), the client rate limit of every scheduler; SBS_SCHEDS (stock,ome,limit);
## SBS_OME_ARGS, extra OMEGangPack argument lines for ome (e.g. "bindWindowMilliseconds: 0");
## stock and limit run once per run, ome once per gang size; SBS_FAILOVER=1 measures a leader
## change instead (stock and ome with leader election, a departed leader's Lease, every
## SBS_FORMING_EVERY-th gang (4) forming: Lease acquired → first bind and → all bound);
## results.md, heap_*.pb.gz and scheduler logs in $(SBS_OUT). See docs/benchmarks.md.
SBS_OUT     ?= $(BIN)/sidebyside
SBS_TIMEOUT ?= 90m
SBS_TMPDIR  ?= $(shell test -w /dev/shm && echo /dev/shm || echo /tmp)
sidebyside: build $(CLUSTER_TOOLS)
	@mkdir -p $(abspath $(SBS_OUT))
	set -o pipefail; OME_SIDEBYSIDE=1 SBS_OUT=$(abspath $(SBS_OUT)) TMPDIR=$(SBS_TMPDIR) $(GO) test -count=1 -timeout $(SBS_TIMEOUT) \
		-run '^TestSideBySide$$' -v ./test/sidebyside/ 2>&1 | tee $(abspath $(SBS_OUT))/sidebyside.log

## intree: Kubernetes v1.37.2's own scheduler_perf workloads for topology-aware workload
## scheduling (podgroup/tas: 5,000 nodes in racks of 100, gangs of 4 or 1,000 pods, each
## gang in one rack), from test/intree, a module of its own pinned to k8s.io/kubernetes
## v1.37.2 (built once into bin/intree.test, 180 MB; the first build compiles Kubernetes 1.37,
## about 15 minutes on 2 cores), run in the upstream package's directory of the module cache.
## INTREE_CASES selects workloads by regexp (default the 750-gang one); results in
## $(INTREE_OUT). Beside it: make bench-5000 BENCH_CASES='TAS4_B_OME' (the same shapes through
## OMEGangPack). Not part of make test. See docs/benchmarks.md.
INTREE_OUT   ?= $(BIN)/intree
INTREE_CASES ?= 5000Nodes_750Gangs_3000Pods
.PHONY: intree
intree: $(BIN)/etcd
	cd test/intree && $(GO) test -c -o $(BIN)/intree.test .
	@mkdir -p $(INTREE_OUT)
	cd "$$(cd test/intree && $(GO) list -m -f '{{.Dir}}' k8s.io/kubernetes)/test/integration/scheduler_perf/podgroup/tas" && \
	  TMPDIR=$(BENCH_TMPDIR) PATH=$(BIN):$$PATH $(BIN)/intree.test -test.run '^$$' \
	  -test.bench 'BenchmarkPerfScheduling/TopologyAwareScheduling/$(INTREE_CASES)$$' -test.benchtime 1x \
	  -test.timeout $(BENCH_TIMEOUT) -perf-scheduling-label-filter=performance -data-items-dir=$(INTREE_OUT) \
	  2>&1 | tee $(INTREE_OUT)/intree.log | grep --line-buffered -E '^(Benchmark|--- |PASS|FAIL|ok|placement)' | cut -c1-200

## bench: scheduler_perf benchmarks at reduced sizes, every workload for the stock profile (A),
## ome-scheduler (B) and in-tree GangScheduling (C); prints the results tables (median over
## BENCH_COUNT runs). bench-full: larger sizes. BENCH_CASES selects test cases by regexp
## (e.g. 'Gang8_.*'). etcd keeps its data in BENCH_TMPDIR (tmpfs: no fsync noise).
## Output in $(BENCH_OUT): JSON data items, observer_*.json, full log. See docs/benchmarks.md.
BENCH_OUT     ?= $(BIN)/bench
BENCH_TIMEOUT ?= 90m
BENCH_COUNT   ?= 1
BENCH_CASES   ?= .
BENCH_TMPDIR  ?= $(shell test -w /dev/shm && echo /dev/shm || echo /tmp)
BENCH_ARGS    ?=
.PHONY: bench bench-full bench-5000
bench bench-full bench-5000: $(BIN)/etcd
	@mkdir -p $(BENCH_OUT) && rm -f $(BENCH_OUT)/observer_*.json $(BENCH_OUT)/BenchmarkPerfScheduling*.json
	set -o pipefail; TMPDIR=$(BENCH_TMPDIR) PATH=$(BIN):$$PATH $(GO) test -run '^$$' -bench '^BenchmarkPerfScheduling$$/$(BENCH_CASES)/' \
		-benchtime=1x -count=$(BENCH_COUNT) -timeout $(BENCH_TIMEOUT) \
		./test/bench/ -args -perf-scheduling-label-filter=$@ -data-items-dir=$(BENCH_OUT) $(BENCH_ARGS) \
		| tee $(BENCH_OUT)/$@.log | grep --line-buffered -E '^(Benchmark|--- |PASS|FAIL|ok)' | cut -c1-160
	$(GO) run ./test/bench/benchtable $(BENCH_OUT)
