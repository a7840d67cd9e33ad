//go:build tools

// Package tools pins the Kubernetes components that the Makefile builds into bin/ for the
// local control plane (kube-apiserver, kube-controller-manager, kubectl) to the exact versions in go.mod.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
