package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

func httpRequest(ctx context.Context, url string) (*http.Request, error) {
	return http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") + "\n"
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer out.Close()
	_, err = io.Copy(out, in)
	return err
}

// showKubectl prints each kubectl command line and its output, stopping at the first error.
func showKubectl(kubectl func(...string) (string, error), cmds ...[]string) error {
	for _, c := range cmds {
		fmt.Printf("$ kubectl %s\n", strings.Join(c, " "))
		out, err := kubectl(c...)
		if err != nil {
			return err
		}
		fmt.Println(out)
	}
	return nil
}
