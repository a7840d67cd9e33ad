// Command filegraph prints, for one Go package, which functions and methods each file calls
// from the package's other files, and the pairs of files that call each other:
//
//	go run ./hack/filegraph ./pkg/plugins/gangpack/internal/plan
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/moirai-internal/ome-scheduler/internal/filegraph"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: filegraph <package dir>")
		os.Exit(2)
	}
	g, err := filegraph.Load(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, a := range g.Files {
		var to []string
		for b := range g.Refs[a] {
			to = append(to, b)
		}
		sort.Strings(to)
		fmt.Printf("%s\n", a)
		for _, b := range to {
			fmt.Printf("  -> %s: %s\n", b, strings.Join(g.Refs[a][b], ", "))
		}
	}
	pairs := g.Mutual()
	fmt.Printf("\nmutual pairs: %d\n", len(pairs))
	for _, p := range pairs {
		fmt.Printf("  %s\n", p)
	}
}
