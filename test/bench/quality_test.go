package bench

import (
	"testing"
	"time"
)

// Two domains of two 4-GPU nodes: d0 = n0,n1 and d1 = n2,n3.
func twoDomains() cluster {
	return cluster{nodes: []nodeCap{
		{"n0", "d0", 4}, {"n1", "d0", 4}, {"n2", "d1", 4}, {"n3", "d1", 4},
	}}
}

func member(gang string, created, bound int, node string) podSample {
	p := podSample{gang: gang, created: time.Unix(0, 0).Add(time.Duration(created) * time.Millisecond), node: node, gpus: 1}
	if node != "" {
		p.bound = time.Unix(0, 0).Add(time.Duration(bound) * time.Millisecond)
	}
	return p
}

func TestEvaluate(t *testing.T) {
	pods := []podSample{
		// g1: whole in d0; last created at 30 ms, last bound at 100 ms.
		member("g1", 10, 50, "n0"), member("g1", 30, 100, "n0"), member("g1", 20, 60, "n1"), member("g1", 0, 70, "n1"),
		// g2: split across d0 and d1.
		member("g2", 40, 400, "n0"), member("g2", 40, 300, "n2"), member("g2", 40, 300, "n2"), member("g2", 40, 300, "n3"),
		// g3: one member bound, three waiting.
		member("g3", 50, 500, "n3"), member("g3", 50, 0, ""), member("g3", 50, 0, ""), member("g3", 50, 0, ""),
		// a standalone pod on n1.
		{gpus: 1, node: "n1", bound: time.Unix(1, 0)},
	}
	q := evaluate(twoDomains(), pods)
	if q.pods != 13 || q.podsBound != 10 {
		t.Errorf("pods %d bound %d, want 13 and 10", q.pods, q.podsBound)
	}
	if q.gangs != 3 || q.gangsPlaced != 2 || q.gangsSplit != 1 || q.gangsPartial != 1 {
		t.Errorf("gangs %d placed %d split %d partial %d, want 3 2 1 1", q.gangs, q.gangsPlaced, q.gangsSplit, q.gangsPartial)
	}
	if len(q.latencies) != 2 || q.latencies[0] != 70*time.Millisecond || q.latencies[1] != 360*time.Millisecond {
		t.Errorf("latencies %v, want [70ms 360ms]", q.latencies)
	}
	// Used: n0 3, n1 3 (2 + standalone), n2 2, n3 2 -> free 1+1+2+2 = 6; d0 has 2 slots and
	// d1 has 4 slots: d0 cannot host a gang of 4, so its 2 free GPUs are stranded.
	if q.freeGPUs != 6 || q.strandedGPUs != 2 {
		t.Errorf("free %d stranded %d, want 6 and 2", q.freeGPUs, q.strandedGPUs)
	}
	// Offline, with only the standalone pod placed (n1 has 3 free): g1 -> d0 (7 slots < 8),
	// leaving d0 3; g2 -> d1 (8), leaving 4; g3 -> d1 exactly. All three fit whole, where
	// the scheduler under test placed two (one of them split).
	if q.liveGangs != 3 || q.liveGangsWhole != 2 || q.offlineBestFit != 3 {
		t.Errorf("live %d whole %d offline %d, want 3 2 3", q.liveGangs, q.liveGangsWhole, q.offlineBestFit)
	}
}

func TestOfflineBestFitPrefersTightestDomain(t *testing.T) {
	// d0 has 5 free slots (a standalone pod took 3 of n0), d1 has 8. Gangs of 4, 4, 4:
	// best fit puts the first in d0 (tightest), the next two in d1; first fit by name would
	// also take d0 first, but a largest-first policy would take d1 and strand d0 -> 2.
	pods := []podSample{
		{gpus: 3, node: "n0", bound: time.Unix(1, 0)},
		member("a", 0, 0, ""), member("a", 0, 0, ""), member("a", 0, 0, ""), member("a", 0, 0, ""),
		member("b", 1, 0, ""), member("b", 1, 0, ""), member("b", 1, 0, ""), member("b", 1, 0, ""),
		member("c", 2, 0, ""), member("c", 2, 0, ""), member("c", 2, 0, ""), member("c", 2, 0, ""),
	}
	q := evaluate(twoDomains(), pods)
	if q.offlineBestFit != 3 {
		t.Errorf("offline best fit %d, want 3", q.offlineBestFit)
	}
	if q.gangsPlaced != 0 || len(q.latencies) != 0 {
		t.Errorf("placed %d latencies %v, want none", q.gangsPlaced, q.latencies)
	}
}

func TestDeletedMembersAndPercentile(t *testing.T) {
	done := member("g", 0, 10, "n0")
	done.deleted = true // a finished gang deleted after it was bound still counts as placed
	gone := member("g", 0, 0, "")
	gone.deleted, gone.neverBound = true, true // deleted before binding: not a member any more
	q := evaluate(twoDomains(), []podSample{done, member("g", 5, 20, "n1"), gone})
	if q.gangsPlaced != 1 || q.latencies[0] != 15*time.Millisecond || q.liveGangsWhole != 1 {
		t.Errorf("placed %d latencies %v liveWhole %d, want 1 [15ms] 1", q.gangsPlaced, q.latencies, q.liveGangsWhole)
	}
	sorted := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 5}, {0.99, 10}, {0.1, 1}, {1, 10}, {0, 1}} {
		if got := percentile(sorted, c.p); got != c.want {
			t.Errorf("percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if percentile(nil, 0.99) != 0 {
		t.Error("percentile of nothing is not 0")
	}
}

func TestWaitKey(t *testing.T) {
	for msg, want := range map[string]string{
		"0/256 nodes are available: no domain has room for gang gangs/pg-7: every fitting domain is reserved for a forming gang.": "no domain has room for gang <gang> every fitting domain is reserved for a forming gang.",
		"waiting for all PodGroup member templates of gangs/pg-3 (2 of 4)":                                                        "waiting for all PodGroup member templates of <gang> <n> of <n>",
	} {
		if got := waitKey(msg); got != want {
			t.Errorf("waitKey(%q) = %q, want %q", msg, got, want)
		}
	}
}

func TestEvictionsAndPreemptorLatency(t *testing.T) {
	evicted := func(gang, node string) podSample {
		p := member(gang, 0, 5, node)
		p.deleted = true
		return p
	}
	pods := []podSample{
		// low/a: all four members evicted (a whole-gang eviction).
		evicted("prio-low/a", "n0"), evicted("prio-low/a", "n0"), evicted("prio-low/a", "n1"), evicted("prio-low/a", "n1"),
		// low/b: one member evicted, three still bound on 3 GPUs (partly evicted).
		evicted("prio-low/b", "n2"), member("prio-low/b", 0, 5, "n2"), member("prio-low/b", 0, 5, "n3"), member("prio-low/b", 0, 5, "n3"),
		// low/c: untouched.
		member("prio-low/c", 0, 5, "n2"), member("prio-low/c", 0, 5, "n2"), member("prio-low/c", 0, 5, "n3"), member("prio-low/c", 0, 5, "n3"),
		// the preemptor: last member created at 10 ms, last bound at 40 ms.
		member("prio-high/p", 0, 30, "n0"), member("prio-high/p", 10, 40, "n1"),
	}
	q := evaluate(twoDomains(), pods)
	if q.gangsEvicted != 2 || q.gangsPartlyEvicted != 1 || q.podsEvicted != 5 || q.partlyEvictedHeldGPUs != 3 {
		t.Errorf("evicted gangs %d partly %d members %d held %d, want 2 1 5 3",
			q.gangsEvicted, q.gangsPartlyEvicted, q.podsEvicted, q.partlyEvictedHeldGPUs)
	}
	if len(q.preemptorLatencies) != 1 || q.preemptorLatencies[0] != 30*time.Millisecond {
		t.Errorf("preemptor latencies %v, want [30ms]", q.preemptorLatencies)
	}
}

func TestPlacementGroups(t *testing.T) {
	in := func(group, gang string, created, bound int, node string) podSample {
		p := member(gang, created, bound, node)
		p.group = group
		return p
	}
	pods := []podSample{
		// together: both gangs in d0; last member created at 20 ms, last bound at 90 ms.
		in("together", "t0", 0, 50, "n0"), in("together", "t0", 10, 60, "n1"),
		in("together", "t1", 20, 90, "n0"), in("together", "t1", 20, 80, "n1"),
		// apart: gang a0 whole in d0, gang a1 whole in d1.
		in("apart", "a0", 0, 30, "n0"), in("apart", "a0", 0, 30, "n0"),
		in("apart", "a1", 0, 40, "n2"), in("apart", "a1", 0, 40, "n3"),
		// waiting: one gang bound, the other not: not placed, not apart.
		in("waiting", "w0", 0, 5, "n2"), in("waiting", "w0", 0, 5, "n2"),
		in("waiting", "w1", 0, 0, ""), in("waiting", "w1", 0, 0, ""),
		// a gang without a group is not counted.
		member("lone", 0, 5, "n3"),
	}
	q := evaluate(twoDomains(), pods)
	if q.groups != 3 || q.groupsPlaced != 2 || q.groupsApart != 1 {
		t.Errorf("groups %d placed %d apart %d, want 3 2 1", q.groups, q.groupsPlaced, q.groupsApart)
	}
	if len(q.groupLatencies) != 2 || q.groupLatencies[0] != 40*time.Millisecond || q.groupLatencies[1] != 70*time.Millisecond {
		t.Errorf("group latencies %v, want [40ms 70ms]", q.groupLatencies)
	}
	if q.gangsSplit != 0 {
		t.Errorf("gangs split %d, want 0 (groups apart are not gang splits)", q.gangsSplit)
	}
}
