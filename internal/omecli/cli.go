// Package omecli is kubectl-ome, the kubectl plugin that explains OMEGangPack's placement
// decisions with the plugin's own planning code (pkg/plugins/gangpack/explain): explain an
// existing PodGroup, what-if a hypothetical gang, and the fragmentation view of the domains.
package omecli

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/moirai-internal/ome-scheduler/pkg/plugins/gangpack/explain"
)

// Exit codes, as kubectl's: 0 done, 1 an error, 2 a usage error.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// usageError marks an error in the command line.
type usageError struct{ error }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// options are the flags every command shares.
type options struct {
	config              *genericclioptions.ConfigFlags
	streams             genericiooptions.IOStreams
	output              string
	schedulerURL        string
	schedulerCA         string
	schedulerNamespace  string
	schedulerName       string
	schedulerServerName string
	// schedulerInsecure skips the verification of the scheduler's serving certificate;
	// schedulerSendCredentials then still sends the kubeconfig's credentials (read.go).
	schedulerInsecure        bool
	schedulerSendCredentials bool
}

// Run runs kubectl-ome with args and returns its exit code.
func Run(args []string, streams genericiooptions.IOStreams) int {
	defer debug.SetGCPercent(debug.SetGCPercent(explain.GCPercent))
	cmd := NewCommand(streams)
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(streams.ErrOut, "error:", err)
	var u usageError
	if errors.As(err, &u) || strings.HasPrefix(err.Error(), "unknown command") {
		return ExitUsage
	}
	return ExitError
}

// NewCommand is the kubectl-ome root command.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &options{config: genericclioptions.NewConfigFlags(true), streams: streams}
	root := &cobra.Command{
		Use:   "kubectl-ome",
		Short: "Explain where ome-scheduler places gangs, and why",
		Long: `kubectl ome runs ome-scheduler's own planning (member room, best fit, the reservations of
forming gangs) over the cluster's nodes and pods, and prints what the scheduler would decide.

The reservations of forming gangs live only in the leading scheduler's memory. kubectl ome
finds the leader as kubectl would: the holder of the Lease --scheduler-name in
--scheduler-namespace (the chart's scheduler.name and release namespace, default
ome-scheduler in ome) names its pod, and kubectl ome port-forwards to that pod's secure port
(like kubectl port-forward, through the API server, with your kubeconfig's credentials). That
needs get on leases and pods and create on pods/portforward in that namespace, and get on
/configz (the chart's {name}-debug-reader role). --scheduler-url names an endpoint instead.
When the reservations cannot be read the output says "reservations unknown" and why.

The scheduler's serving certificate is verified against --scheduler-ca, else the kubeconfig's
CA, before the kubeconfig's credentials are sent (through the port-forward, as the name
--scheduler-tls-server-name, default {name}-metrics.{namespace}.svc). Its default certificate
is self-signed and nothing can verify it: pass --scheduler-insecure-skip-tls-verify (through the
port-forward the credentials still go to the Lease holder's pod only), or give the scheduler a
certificate (the chart's scheduler.metrics.tls.secretName) and pass --scheduler-ca. With
--scheduler-url and --scheduler-insecure-skip-tls-verify no credentials are sent unless
--scheduler-insecure-send-credentials (the scheduler then refuses the anonymous request).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	o.config.AddFlags(root.PersistentFlags())
	pf := root.PersistentFlags()
	pf.StringVarP(&o.output, "output", "o", "table", "Output format: table, json or yaml")
	pf.StringVar(&o.schedulerURL, "scheduler-url", "", "The leading ome-scheduler's secure port, e.g. https://127.0.0.1:10259 (default: port-forward to the pod that holds the leader-election Lease)")
	pf.StringVar(&o.schedulerNamespace, "scheduler-namespace", DefaultSchedulerNamespace, "Namespace of the ome-scheduler release: where its leader-election Lease and pods are")
	pf.StringVar(&o.schedulerName, "scheduler-name", DefaultSchedulerName, "The release's scheduler.name: the name of its leader-election Lease")
	pf.StringVar(&o.schedulerCA, "scheduler-ca", "", "CA file that verifies the scheduler's serving certificate (default: the kubeconfig's CA)")
	pf.StringVar(&o.schedulerServerName, "scheduler-tls-server-name", "", "Name the scheduler's serving certificate must carry (default through the port-forward: {scheduler-name}-metrics.{scheduler-namespace}.svc; with --scheduler-url: its host)")
	pf.BoolVar(&o.schedulerInsecure, "scheduler-insecure-skip-tls-verify", false, "Do not verify the scheduler's serving certificate (its default one is self-signed); with --scheduler-url no credentials are sent to it then, unless --scheduler-insecure-send-credentials")
	pf.BoolVar(&o.schedulerSendCredentials, "scheduler-insecure-send-credentials", false, "With --scheduler-insecure-skip-tls-verify or an http:// --scheduler-url, still send the kubeconfig's credentials to --scheduler-url (only for an endpoint you trust, such as a kubectl port-forward on 127.0.0.1)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return o.checkSchedulerFlags() }
	root.AddCommand(o.explainCommand(), o.whatIfCommand(), o.domainsCommand())
	return root
}

// checkSchedulerFlags rejects the scheduler endpoint's flags that contradict each other.
func (o *options) checkSchedulerFlags() error {
	switch {
	case o.schedulerInsecure && o.schedulerCA != "":
		return usagef("--scheduler-ca and --scheduler-insecure-skip-tls-verify contradict each other")
	case o.schedulerSendCredentials && !o.schedulerInsecure && !o.plainHTTP():
		return usagef("--scheduler-insecure-send-credentials needs --scheduler-insecure-skip-tls-verify or an http:// --scheduler-url (a verified endpoint gets the credentials anyway)")
	}
	return nil
}

// print writes v as the -o format asks; table uses v's own table.
func (o *options) print(v interface{ WriteTable(io.Writer) error }, note string) error {
	if note != "" && o.output != "table" && o.output != "" {
		fmt.Fprintln(o.streams.ErrOut, "note:", note)
	}
	switch o.output {
	case "json":
		return writeJSON(o.streams.Out, v)
	case "yaml":
		return writeYAML(o.streams.Out, v)
	case "table", "":
		if note != "" {
			fmt.Fprintln(o.streams.Out, "note:", note)
		}
		return v.WriteTable(o.streams.Out)
	}
	return usagef("unknown output format %q: use table, json or yaml", o.output)
}
