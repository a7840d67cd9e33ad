# syntax=docker/dockerfile:1
# ome-scheduler image: a static binary on distroless, run as the nonroot user.
#   docker buildx build --platform linux/amd64,linux/arm64 -t ome-scheduler:latest .
# The chart runs it with `command: ["/ome-scheduler"]` and `runAsNonRoot: true`, which needs
# the numeric USER below.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS builder
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o /out/ome-scheduler ./cmd/ome-scheduler

FROM gcr.io/distroless/static:nonroot
COPY --from=builder /out/ome-scheduler /ome-scheduler
USER 65532:65532
ENTRYPOINT ["/ome-scheduler"]
