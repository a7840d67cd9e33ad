// Command ome-scheduler is kube-scheduler 1.35 with the OMEGangPack and OMEGangSort plugins
// registered.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand(
		app.WithPlugin(gangpack.Name, gangpack.New),
		app.WithPlugin(gangpack.SortName, gangpack.NewSort))))
}
