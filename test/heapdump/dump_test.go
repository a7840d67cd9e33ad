package heapdump

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// held keeps a holder alive through a global, as a long-lived cache would.
var held *holder

type holder struct{ payload *payload }

type payload struct{ data [4096]byte }

//go:noinline
func allocHolder() *holder { return &holder{} }

//go:noinline
func allocPayload() *payload { return &payload{} }

// A dump of this test's own process finds the payload, names the holder that keeps it alive
// and the global it hangs from, and counts its bytes as retained by the holder.
func TestDumpFindsWhatKeepsAnObjectAlive(t *testing.T) {
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = old }()
	held = allocHolder()
	held.payload = allocPayload()
	runtime.GC()

	path := filepath.Join(t.TempDir(), "heap.dump")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	debug.WriteHeapDump(f.Fd())
	f.Close()
	f, err = os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(held)

	chains := d.Chains("heapdump.allocPayload", 4)
	if len(chains) != 1 || chains[0].Count != 1 {
		t.Fatalf("chains of the payload: %+v, want one chain of one object", chains)
	}
	if c := chains[0]; len(c.Holders) != 1 || !strings.Contains(c.Holders[0], "heapdump.allocHolder") || c.Root != "bss" && c.Root != "data" {
		t.Fatalf("payload kept by %q from %q, want the holder from a global", c.Holders, c.Root)
	}
	if got := d.Retained("heapdump.allocHolder"); got < 4096 {
		t.Fatalf("retained by the holder: %d bytes, want at least the 4096-byte payload", got)
	}
	if d.Goroutines == 0 || d.Frames["testing.tRunner"] == 0 {
		t.Fatalf("goroutines %d, tRunner frames %d: stacks not read", d.Goroutines, d.Frames["testing.tRunner"])
	}
}

// Anything else is refused with an error, not a panic.
func TestReadRejectsOtherInput(t *testing.T) {
	for _, in := range []string{"", "not a dump", header + "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", header + "\x63"} {
		if _, err := Read(strings.NewReader(in)); err == nil {
			t.Errorf("Read(%q) succeeded", in)
		}
	}
}
