package omecli

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
		err  string
	}{
		{[]string{"explain"}, ExitUsage, "usage: kubectl ome explain podgroup NAME"},
		{[]string{"explain", "pods", "x"}, ExitUsage, "usage:"},
		{[]string{"whatif", "--requests", "nvidia.com/gpu=8"}, ExitUsage, "--min-member must be at least 1"},
		{[]string{"whatif", "--min-member", "2"}, ExitUsage, "--requests is required"},
		{[]string{"domains", "--bogus"}, ExitUsage, "unknown flag: --bogus"},
		{[]string{"nosuch"}, ExitUsage, "unknown command"},
		{[]string{"domains", "--kubeconfig", "/nonexistent/kubeconfig"}, ExitError, "error:"},
		{[]string{"--help"}, ExitOK, ""},
	} {
		var out, errOut bytes.Buffer
		code := Run(tc.args, genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
		if code != tc.want || !strings.Contains(errOut.String(), tc.err) {
			t.Errorf("kubectl ome %v: exit %d, stderr %q; want %d with %q", tc.args, code, errOut.String(), tc.want, tc.err)
		}
	}
}

func TestParseRequests(t *testing.T) {
	got, err := parseRequests("nvidia.com/gpu=8, cpu=16,memory=64Gi")
	if err != nil || len(got) != 3 || got.Cpu().MilliValue() != 16000 || got.Name("nvidia.com/gpu", "DecimalSI").Value() != 8 || got.Memory().Value() != 64<<30 {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"gpu", "=1", "cpu=lots"} {
		if _, err := parseRequests(bad); err == nil {
			t.Errorf("parseRequests(%q) accepted", bad)
		}
	}
}
