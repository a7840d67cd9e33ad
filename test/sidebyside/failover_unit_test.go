package sidebyside

import "testing"

// The failover mode's forming gangs: which gangs form, where their members were nominated,
// and which kept their clique.
func TestFailoverFormingGangs(t *testing.T) {
	sc := scenario{params: params{nodes: 16, gpusPerNode: 4, clique: 2, fill: 1, formingEvery: 2}, gang: 4}
	if got := sc.pods(); got != 64 {
		t.Fatalf("pods = %d, want 64", got)
	}
	for i, want := range []bool{true, false, true, false} {
		if got := sc.formingGang(i); got != want {
			t.Errorf("formingGang(%d) = %v, want %v", i, got, want)
		}
	}
	// Gang 2's members are pods 8..11: node 2 (GPUs 8..11), in clique 1 (nodes 2 and 3).
	for k, want := range map[int]string{0: "gpu-node-00000", 3: "gpu-node-00000", 9: "gpu-node-00002", 63: "gpu-node-00015"} {
		if got := sc.nodeOfPod(k); got != want {
			t.Errorf("nodeOfPod(%d) = %s, want %s", k, got, want)
		}
	}
	cliqueOf := map[string]string{"n0": "c0", "n1": "c0", "n2": "c1", "n3": "c2"}
	nominated := map[string]string{"g0": "c0", "g2": "c1", "g4": "c2"}
	node := map[string]string{"g0-0": "n0", "g0-1": "n1", "g2-0": "n2", "g2-1": "n3", "g1-0": "n3"}
	gang := map[string]string{"g0-0": "g0", "g0-1": "g0", "g2-0": "g2", "g2-1": "g2", "g1-0": "g1"}
	// g0 whole in c0; g2 has a member in c2; g4 has no member bound; g1 is not forming.
	if got := formingKept(nominated, node, gang, cliqueOf); got != 1 {
		t.Fatalf("formingKept = %d, want 1 (g0)", got)
	}
}

// Failover mode needs cliques whose GPUs are a multiple of each gang size, and drops limit.
func TestFailoverParams(t *testing.T) {
	t.Setenv("SBS_FAILOVER", "1")
	p := params{clique: 3, gpusPerNode: 4, gangs: []int{4, 8}, scheds: []string{stock, ome, limit}}
	if err := p.readFailover(); err == nil {
		t.Fatal("a clique of 12 GPUs accepted gangs of 8")
	}
	p.gangs = []int{4, 6}
	if err := p.readFailover(); err != nil {
		t.Fatal(err)
	}
	if len(p.scheds) != 2 || p.formingEvery != 4 {
		t.Fatalf("schedulers %v, forming every %d; want stock and ome, 4", p.scheds, p.formingEvery)
	}
}
