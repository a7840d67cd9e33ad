// Command heapdump answers what keeps memory alive in a Go heap dump (see package heapdump
// and docs/benchmarks.md, "Where the extra memory is"):
//
//	heapdump -chains 'QueuedPodInfo).DeepCopy' -depth 6 dump   # who holds objects allocated there
//	heapdump -retained addEventIfAnyInFlight dump              # bytes reachable only through them
//	heapdump -goroutines dump                                  # goroutines and busiest frames
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/moirai-internal/ome-scheduler/test/heapdump"
)

func main() {
	chains := flag.String("chains", "", "group objects allocated under this function by what keeps them alive")
	depth := flag.Int("depth", 6, "holders shown per chain")
	top := flag.Int("top", 10, "chains or frames shown")
	retained := flag.String("retained", "", "bytes reachable only through objects allocated under this function")
	goroutines := flag.Bool("goroutines", false, "count goroutines and the functions on their stacks")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: heapdump [-chains fn [-depth n]] [-retained fn] [-goroutines] <dump>")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	d, err := heapdump.Read(f)
	f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%d objects, %d roots, %.1f MiB reachable\n", len(d.Objects), len(d.Roots), mib(d.ReachableBytes(nil)))
	if *retained != "" {
		fmt.Printf("retained by objects allocated under %s: %.2f MiB\n", *retained, mib(d.Retained(*retained)))
	}
	if *goroutines {
		printFrames(d, *top)
	}
	if *chains != "" {
		for i, c := range d.Chains(*chains, *depth) {
			if i == *top {
				break
			}
			fmt.Printf("\n%d objects kept by:\n  %s\n  root: %s\n", c.Count, strings.Join(c.Holders, "\n  "), c.Root)
		}
	}
}

func printFrames(d *heapdump.Dump, top int) {
	fmt.Printf("%d goroutines\n", d.Goroutines)
	names := make([]string, 0, len(d.Frames))
	for n := range d.Frames {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return d.Frames[names[i]] > d.Frames[names[j]] })
	for i, n := range names {
		if i == top {
			break
		}
		fmt.Printf("%7d %s\n", d.Frames[n], n)
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
