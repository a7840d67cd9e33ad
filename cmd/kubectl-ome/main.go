// Command kubectl-ome is a kubectl plugin (copy it onto the PATH, then run `kubectl ome`) that
// explains ome-scheduler's placement decisions with the scheduler's own planning code:
// `explain podgroup NAME`, `whatif` and `domains`. docs/reference.md describes it.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/moirai-internal/ome-scheduler/internal/omecli"
)

func main() {
	os.Exit(omecli.Run(os.Args[1:], genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}))
}
