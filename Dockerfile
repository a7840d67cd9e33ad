# syntax=docker/dockerfile:1
# ome-scheduler image: a static binary on distroless, run as the nonroot user.
#   make image   (docker buildx build --build-arg VERSION=<VERSION> --build-arg KUBE_VERSION=<KUBE_VERSION> ...)
# VERSION (the VERSION file, without the v) and KUBE_VERSION (the Makefile's) are stamped into
# the binary as `make build` does, so `/ome-scheduler --version` prints
# `ome-scheduler v<VERSION> (Kubernetes <KUBE_VERSION>)`.
# The chart runs it with `command: ["/ome-scheduler"]` and `runAsNonRoot: true`, which needs
# the numeric USER below.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS builder
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=0.0.0-dev
ARG KUBE_VERSION=v1.35.4
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN kube_minor=${KUBE_VERSION#v*.}; kube_minor=${kube_minor%%.*}; kube_major=${KUBE_VERSION#v}; kube_major=${kube_major%%.*}; \
    kv=k8s.io/component-base/version; \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w \
      -X $kv.gitVersion=${KUBE_VERSION} -X $kv.gitMajor=${kube_major} -X $kv.gitMinor=${kube_minor} \
      -X $kv.gitTreeState=clean -X $kv.buildDate=1970-01-01T00:00:00Z \
      -X github.com/moirai-internal/ome-scheduler/internal/version.Version=v${VERSION}" \
    -o /out/ome-scheduler ./cmd/ome-scheduler

FROM gcr.io/distroless/static:nonroot
COPY --from=builder /out/ome-scheduler /ome-scheduler
USER 65532:65532
ENTRYPOINT ["/ome-scheduler"]
