//go:build heapdump

// Built only with -tags heapdump, for memory investigations (docs/benchmarks.md, "Where the
// extra memory is"): SIGUSR1 writes a heap dump after a GC to $OME_HEAPDUMP_DIR (default the
// temporary directory) as heapdump-<pid>-<n>; with OME_HEAPDUMP_PEAK=1 the process also
// writes heapdump-<pid>-peak, without a GC, each time its RSS grows 8 MiB past the last one.
// A dump names the allocation stack of the objects the memory profiler sampled: run with
// GODEBUG=memprofilerate=N for more of them. test/heapdump reads the dumps.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

func init() {
	dir := os.Getenv("OME_HEAPDUMP_DIR")
	if dir == "" {
		dir = os.TempDir()
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	go func() {
		for n := 1; ; n++ {
			<-ch
			runtime.GC()
			writeHeapDump(filepath.Join(dir, fmt.Sprintf("heapdump-%d-%d", os.Getpid(), n)))
		}
	}()
	if os.Getenv("OME_HEAPDUMP_PEAK") == "1" {
		go dumpPeaks(filepath.Join(dir, fmt.Sprintf("heapdump-%d-peak", os.Getpid())))
	}
}

// dumpPeaks overwrites path each time the RSS grows 8 MiB past the last dump.
func dumpPeaks(path string) {
	self, err := procfs.Self()
	if err != nil {
		fmt.Fprintln(os.Stderr, "heap dump:", err)
		return
	}
	var last uint64
	for range time.Tick(100 * time.Millisecond) {
		st, err := self.NewStatus()
		if err == nil && st.VmRSS >= last+8<<20 {
			last = st.VmRSS
			writeHeapDump(path)
		}
	}
}

// writeHeapDump writes the dump next to path and renames it, so a reader never sees half.
func writeHeapDump(path string) {
	f, err := os.Create(path + ".tmp")
	if err != nil {
		fmt.Fprintln(os.Stderr, "heap dump:", err)
		return
	}
	debug.WriteHeapDump(f.Fd())
	if err := f.Close(); err == nil {
		_ = os.Rename(path+".tmp", path)
	}
}
