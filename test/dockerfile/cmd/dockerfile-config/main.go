// Command dockerfile-config prints, as JSON, what the Dockerfile's final stage makes of the
// image (package dockerfile): go run ./cmd/dockerfile-config [-build-arg K=V]... PATH
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/moirai-internal/ome-scheduler/test/dockerfile"
)

type argFlags map[string]string

func (a argFlags) String() string { return fmt.Sprint(map[string]string(a)) }
func (a argFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("%q is not KEY=VALUE", s)
	}
	a[k] = v
	return nil
}

func main() {
	args := argFlags{}
	flag.Var(args, "build-arg", "KEY=VALUE, as docker build --build-arg (repeatable)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: dockerfile-config [-build-arg K=V]... DOCKERFILE")
		os.Exit(2)
	}
	img, err := dockerfile.Load(flag.Arg(0), args)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(img); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
