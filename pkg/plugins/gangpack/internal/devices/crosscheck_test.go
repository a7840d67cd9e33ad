package devices

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"
)

// arithmetic is the brute-force answer for interchangeable GPUs: members fit while
// their GPUs do, a shared channel needs one free channel on the node.
func arithmetic(free, freeChannels, per, limit int, sharedChannel bool) int {
	if sharedChannel && freeChannels == 0 {
		return 0
	}
	return min(limit, free/per)
}

// world is one random cluster: per node a GPU count, which GPUs other claims hold,
// and a channel count, which the first channel may be held.
type world struct {
	gpus, channels []int
	held           [][]bool
	channelHeld    []bool
}

func randomWorld(r *rand.Rand, nodes, maxGPUs int) world {
	w := world{gpus: make([]int, nodes), channels: make([]int, nodes), held: make([][]bool, nodes), channelHeld: make([]bool, nodes)}
	for i := range nodes {
		w.gpus[i] = r.Intn(maxGPUs + 1)
		w.channels[i] = r.Intn(3)
		w.channelHeld[i] = w.channels[i] > 0 && r.Intn(3) == 0
		w.held[i] = make([]bool, w.gpus[i])
		for j := range w.held[i] {
			w.held[i][j] = r.Intn(3) == 0
		}
	}
	return w
}

func (w world) inputs(probe time.Duration) *Inputs {
	var slices []*resourceapi.ResourceSlice
	var held []structured.DeviceID
	for i := range w.gpus {
		name := fmt.Sprintf("node-%d", i)
		slices = append(slices, nodeSlices(name, w.gpus[i], w.channels[i])...)
		for j, h := range w.held[i] {
			if h {
				held = append(held, structured.MakeDeviceID(gpuDriver, name, fmt.Sprintf("gpu-%d", j)))
			}
		}
		if w.channelHeld[i] {
			held = append(held, structured.MakeDeviceID(channelDriver, name, "channel-0"))
		}
	}
	in := NewInputs(structured.Features{}, allocatedState(held...), stdClasses(), slices, nil)
	in.ProbeBudget = probe
	return in
}

func (w world) free(i int) (gpus, channels int) {
	for _, h := range w.held[i] {
		if !h {
			gpus++
		}
	}
	channels = w.channels[i]
	if w.channelHeld[i] {
		channels--
	}
	return gpus, channels
}

func checkWorld(t *testing.T, w world, probe time.Duration, per, limit int, sharedChannel bool) {
	t.Helper()
	in := w.inputs(probe)
	var shared []*resourceapi.ResourceClaim
	if sharedChannel {
		shared = claims(channelClaim())
	}
	for i := range w.gpus {
		got, err := Room(context.Background(), in, node(fmt.Sprintf("node-%d", i)), claims(gpus(int64(per))), shared, limit)
		free, channels := w.free(i)
		want := arithmetic(free, channels, per, limit, sharedChannel)
		if err != nil || got != want {
			t.Fatalf("node-%d (%d GPUs, %d free, %d free channels), %d per member, limit %d, shared channel %v, probe %v: Room = %d, %v; want %d",
				i, w.gpus[i], free, channels, per, limit, sharedChannel, probe, got, err, want)
		}
	}
}

// TestRoomMatchesArithmetic compares Room with floor(free/perMember) on random
// clusters. The joint probe runs on small nodes only: when it fails it searches
// every assignment of the free GPUs, which the budget would cut short on big ones.
func TestRoomMatchesArithmetic(t *testing.T) {
	r := rand.New(rand.NewSource(38))
	for iter := 0; iter < 300; iter++ {
		probe := time.Duration(0)
		maxGPUs := 8
		if iter%3 == 0 {
			probe, maxGPUs = time.Minute, 5
		}
		w := randomWorld(r, 1+r.Intn(3), maxGPUs)
		checkWorld(t, w, probe, 1+r.Intn(3), 1+r.Intn(9), r.Intn(2) == 0)
	}
}

// FuzzRoom is the same property for one node: gpus (0..15), a bit mask of held
// GPUs, GPUs per member (1..4), limit (1..16), a shared channel, the probe.
func FuzzRoom(f *testing.F) {
	f.Add(uint8(4), uint16(0), uint8(1), uint8(8), false, false)
	f.Add(uint8(8), uint16(0b1010), uint8(2), uint8(8), true, false)
	f.Add(uint8(5), uint16(0b1), uint8(3), uint8(2), true, true)
	f.Add(uint8(0), uint16(0), uint8(1), uint8(1), false, true)
	f.Fuzz(func(t *testing.T, g uint8, mask uint16, per, limit uint8, sharedChannel, probe bool) {
		w := world{gpus: []int{int(g % 16)}, channels: []int{1}, channelHeld: []bool{false}}
		w.held = [][]bool{make([]bool, w.gpus[0])}
		for j := range w.held[0] {
			w.held[0][j] = mask&(1<<j) != 0
		}
		budget := time.Duration(0)
		if probe && w.gpus[0] <= 6 {
			budget = time.Minute
		}
		checkWorld(t, w, budget, 1+int(per%4), 1+int(limit%16), sharedChannel)
	})
}
