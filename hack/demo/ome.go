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
		// The demo scheduler's serving certificate is self-signed, reached on 127.0.0.1.
		flags := []string{"--scheduler-url=" + url, "--scheduler-insecure-skip-tls-verify", "--scheduler-insecure-send-credentials"}
		fmt.Printf("$ kubectl ome %s %s\n", strings.Join(args, " "), strings.Join(flags, " "))
		cmd := exec.CommandContext(ctx, path, append(append(args, "--kubeconfig="+kubeconfig), flags...)...)
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("kubectl ome %s: %w", strings.Join(args, " "), describeExit(err))
		}
		fmt.Println(string(out))
	}
	return nil
}
