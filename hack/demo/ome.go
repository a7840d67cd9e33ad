package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/moirai-internal/ome-scheduler/internal/devenv"
)

// showKubectlOme prints `kubectl ome explain` for the demo gang and `kubectl ome domains`,
// run with bin/kubectl-ome (make build) against the scheduler's secure port.
func showKubectlOme(ctx context.Context, kubeconfig string, port int) error {
	path, err := devenv.Bin("kubectl-ome")
	if err != nil {
		return err
	}
	url := fmt.Sprintf("https://127.0.0.1:%d", port)
	for _, args := range [][]string{
		{"explain", "podgroup", "gang-demo", "-n", "gang-demo"},
		{"domains", "--topology-key", devenv.CliqueKey},
	} {
		fmt.Printf("$ kubectl ome %s --scheduler-url %s\n", strings.Join(args, " "), url)
		cmd := exec.CommandContext(ctx, path, append(args, "--kubeconfig="+kubeconfig, "--scheduler-url="+url)...)
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("kubectl ome %s: %w", strings.Join(args, " "), describeExit(err))
		}
		fmt.Println(string(out))
	}
	return nil
}
