package bench

import (
	"math"
	"testing"
	"time"
)

func at(ms int) time.Time { return time.Unix(100, 0).Add(time.Duration(ms) * time.Millisecond) }

// binds returns n bind times spread evenly over second s (from at(0)).
func bindsIn(s, n int) []time.Time {
	var out []time.Time
	for i := range n {
		out = append(out, at(s*1000+i*1000/n))
	}
	return out
}

func TestThroughputWindowsSteady(t *testing.T) {
	// 20 s at 10 pods/s: every window holds 100 binds, the worst equals the mean.
	var bound []time.Time
	for s := range 20 {
		bound = append(bound, bindsIn(s, 10)...)
	}
	bound[len(bound)-1] = at(20000) // the run ends exactly at 20 s
	ws := throughputWindows([]time.Time{at(0)}, bound, 10)
	if ws.Bound != 200 || ws.Run != 20*time.Second || ws.Mean != 10 {
		t.Fatalf("bound %d run %v mean %v, want 200, 20s, 10", ws.Bound, ws.Run, ws.Mean)
	}
	if ws.Windows != 11 || math.Abs(ws.WorstFraction-0.99) > 1e-9 {
		// The bind moved to 20 s leaves second 19 with 9: the last window holds 99.
		t.Errorf("windows %d worst fraction %v, want 11 and 0.99", ws.Windows, ws.WorstFraction)
	}
}

func TestThroughputWindowsStall(t *testing.T) {
	// 10 s at 30 pods/s, a 12 s stall with 1 bind per second, 8 s at 30 pods/s: the worst
	// window lies inside the stall (10 binds in 10 s: 1 pod/s), the mean is 553 / 30 s.
	var bound []time.Time
	for s := range 30 {
		n := 30
		if s >= 10 && s < 22 {
			n = 1
		}
		bound = append(bound, bindsIn(s, n)...)
	}
	bound = append(bound, at(30000)) // end of the run: 30 s
	created := []time.Time{at(500), at(0), {}}
	ws := throughputWindows(created, bound, 10)
	if ws.Pods != 2 || ws.Bound != 553 {
		t.Fatalf("pods %d bound %d, want 2 and 553", ws.Pods, ws.Bound)
	}
	mean := 553.0 / 30
	if math.Abs(ws.Mean-mean) > 1e-9 {
		t.Errorf("mean %v, want %v", ws.Mean, mean)
	}
	if ws.Windows != 21 || ws.Worst != 1 || ws.WorstAtSeconds != 10 {
		t.Errorf("windows %d worst %v at %d s, want 21, 1 pod/s at 10 s", ws.Windows, ws.Worst, ws.WorstAtSeconds)
	}
	if want := 1 / mean; math.Abs(ws.WorstFraction-want) > 1e-9 || ws.WorstFraction >= 0.2 {
		t.Errorf("worst fraction %v, want %v (below the 20 %% target)", ws.WorstFraction, want)
	}
}

func TestThroughputWindowsShortRun(t *testing.T) {
	// 9.5 s: no whole window; the mean is still reported.
	ws := throughputWindows([]time.Time{at(0)}, []time.Time{at(1000), at(9500), {}}, 10)
	if ws.Windows != 0 || ws.Worst != 0 || ws.WorstFraction != 0 || ws.Bound != 2 {
		t.Errorf("%+v, want no window and 2 bound", ws)
	}
	if math.Abs(ws.Mean-2/9.5) > 1e-9 {
		t.Errorf("mean %v, want %v", ws.Mean, 2/9.5)
	}
	if ws := throughputWindows(nil, nil, 10); ws != (windowStats{}) {
		t.Errorf("empty: %+v", ws)
	}
}

func TestBinsPerSecond(t *testing.T) {
	got := binsPerSecond([]time.Time{at(200)}, []time.Time{at(300), at(1300), at(3300), at(100), {}})
	want := []int{1, 1, 0, 1} // at(100) is before the start and ignored
	if len(got) != len(want) {
		t.Fatalf("bins %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("bins %v, want %v", got, want)
		}
	}
}
