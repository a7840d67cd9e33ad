// Package version holds the ome-scheduler release version, stamped at build time.
package version

// Version is the release version with a leading v: the VERSION file's content, which is also
// the image tag and the chart's appVersion. `make build` and `make image` (ko) set it with
// -ldflags "-X github.com/moirai-internal/ome-scheduler/internal/version.Version=v<VERSION>";
// a plain go build leaves the default.
var Version = "v0.0.0-dev"
