// Command ome-scheduler is kube-scheduler 1.35 with the OMEGangPack and OMEGangSort plugins
// registered.
//
// `--version` prints the ome-scheduler release and the Kubernetes version it is built from,
// `ome-scheduler v1.3.0 (Kubernetes v1.35.4)`. The Kubernetes version stays the one that
// k8s.io/component-base/version reports: kube-scheduler derives its binary and emulation version
// (feature gates) and kubernetes_build_info from it, so the release version cannot go there.
// `--version=raw` prints the Kubernetes version information unchanged.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubeversion "k8s.io/component-base/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/moirai-internal/ome-scheduler/internal/version"
	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack"
)

func main() {
	cmd := app.NewSchedulerCommand(
		app.WithPlugin(gangpack.Name, gangpack.New),
		app.WithPlugin(gangpack.SortName, gangpack.NewSort))
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if f := c.Flags().Lookup("version"); f != nil && f.Value.String() == "true" {
			fmt.Printf("ome-scheduler %s (Kubernetes %s)\n", version.Version, kubeversion.Get())
			return nil
		}
		return run(c, args)
	}
	os.Exit(cli.Run(cmd))
}
