// Command etcd is etcd v3.6 built from the Go module proxy for the local control plane used
// by `make demo` and the integration tests. etcd's own module carries replace directives, so
// `go install` refuses it; this wrapper module builds the same server.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
