# The image `make image` builds with ko, for a Docker engine or any BuildKit builder:
#
#   docker buildx build --platform linux/amd64,linux/arm64 -t registry.example.com/ome/ome-scheduler:v1.3.0 .
#
# The same binary (static, -trimpath, stamped with the Makefile's KUBE_LDFLAGS and OME_LDFLAGS:
# the build arguments' defaults are the Makefile's values and VERSION), at the same path
# (/ko-app/ome-scheduler, the entrypoint the chart's Deployment runs), on the same distroless
# base pinned by the same digest, run as the same user 65532:65532, with the same environment.
# test/dockerfile compares this file with the image ko builds.
ARG GO_IMAGE=golang:1.26
ARG BASE_IMAGE=gcr.io/distroless/static:nonroot@sha256:e8a4044e0b4ae4257efa45fc026c0bc30ad320d43bd4c1a7d5271bd241e386d0

FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS builder
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=1.3.0
ARG KUBE_VERSION=v1.35.4
ARG VERSION_PKG=k8s.io/component-base/version
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH GOFLAGS=-buildvcs=false go build -trimpath \
    -ldflags "-s -w -X ${VERSION_PKG}.gitVersion=${KUBE_VERSION} -X ${VERSION_PKG}.gitMajor=1 -X ${VERSION_PKG}.gitMinor=35 -X ${VERSION_PKG}.gitTreeState=clean -X ${VERSION_PKG}.buildDate=1970-01-01T00:00:00Z -X github.com/moirai-internal/ome-scheduler/internal/version.Version=v${VERSION}" \
    -o /out/ome-scheduler ./cmd/ome-scheduler

FROM ${BASE_IMAGE}
COPY --from=builder /out/ome-scheduler /ko-app/ome-scheduler
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/ko-app
ENV KO_DATA_PATH=/var/run/ko
USER 65532:65532
ENTRYPOINT ["/ko-app/ome-scheduler"]
