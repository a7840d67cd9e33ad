// Package devenv runs a real local control plane (etcd + kube-apiserver through envtest,
// optionally kube-controller-manager) and the ome-scheduler against it. It serves the
// integration tests, the end-to-end tests, the benchmarks and `make demo`.
package devenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	pgclientset "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
)

// ControlPlane is a running etcd + kube-apiserver.
type ControlPlane struct {
	Env            *envtest.Environment
	Config         *rest.Config
	KubeConfigPath string
	Client         kubernetes.Interface
	PodGroups      pgclientset.Interface
	Dir            string
	// Kubelet is the fake kubelet (nil with Options.WithoutKubelet or Options.Kwok).
	Kubelet *Kubelet
	// Kwok is the kwok process (Options.Kwok), else nil.
	Kwok *Process
}

// Options tune Start.
type Options struct {
	// WithoutCRD skips installing the PodGroup CRD.
	WithoutCRD bool
	// Output attaches the control plane's output to this process's.
	Output bool
	// WithoutKubelet runs no fake kubelet: bound pods stay Pending and a deleted bound pod
	// stays Terminating for ever.
	WithoutKubelet bool
	// MaxGrace caps the graceful deletions of the fake kubelet or kwok (0 = DefaultMaxGrace).
	MaxGrace time.Duration
	// Kwok runs bin/kwok instead of the fake kubelet: it simulates the nodes created with
	// NodeSpec.Kwok (or ControlPlane.CreateLayout) and the pods bound to them.
	Kwok bool
	// FeatureGates is kube-apiserver's --feature-gates value ("" = its defaults), e.g.
	// "PodTopologyLabelsAdmission=false".
	FeatureGates string
}

var setLogger sync.Once

// Start starts etcd and kube-apiserver from bin/ (no real kubelets; the admission plugins
// that need them are off), installs the PodGroup CRD and starts kwok (Options.Kwok) or the
// fake kubelet unless told not to.
func Start(opts Options) (*ControlPlane, error) {
	// envtest logs through controller-runtime's logger; without one set it prints a stack
	// trace that reads like a failure in every test run's output.
	setLogger.Do(func() { ctrllog.SetLogger(klog.NewKlogr()) })
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := Bin(b); err != nil {
			return nil, err
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    bin,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
		AttachControlPlaneOutput: opts.Output,
	}
	env.ControlPlane.GetAPIServer().Configure().
		Set("disable-admission-plugins", "ServiceAccount,TaintNodesByCondition,Priority")
	if opts.FeatureGates != "" {
		env.ControlPlane.GetAPIServer().Configure().Set("feature-gates", opts.FeatureGates)
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	cp := &ControlPlane{Env: env, Config: cfg}
	if err := cp.init(); err != nil {
		_ = env.Stop()
		return nil, err
	}
	if !opts.WithoutCRD {
		if err := cp.InstallCRD(context.Background()); err != nil {
			cp.Stop()
			return nil, err
		}
	}
	switch {
	case opts.Kwok:
		if cp.Kwok, err = StartKwok(context.Background(), cp.Dir, cp.KubeConfigPath, opts.MaxGrace); err != nil {
			cp.Stop()
			return nil, err
		}
	case !opts.WithoutKubelet:
		if cp.Kubelet, err = StartKubelet(context.Background(), cp.Client, opts.MaxGrace); err != nil {
			cp.Stop()
			return nil, err
		}
	}
	return cp, nil
}

func (cp *ControlPlane) init() error {
	dir, err := os.MkdirTemp("", "ome-controlplane-")
	if err != nil {
		return err
	}
	cp.Dir = dir
	cp.KubeConfigPath = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(cp.KubeConfigPath, cp.Env.KubeConfig, 0o600); err != nil {
		return err
	}
	cp.Config.QPS, cp.Config.Burst = 500, 1000
	if cp.Client, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return err
	}
	if cp.PodGroups, err = pgclientset.NewForConfig(cp.Config); err != nil {
		return err
	}
	return nil
}

// Stop stops the control plane and removes its files.
func (cp *ControlPlane) Stop() {
	if cp == nil {
		return
	}
	cp.Kubelet.Stop()
	cp.Kwok.Stop(10 * time.Second)
	_ = cp.Env.Stop()
	if cp.Dir != "" {
		_ = os.RemoveAll(cp.Dir)
	}
}

// InstallCRD creates the PodGroup CRD and waits until it is established.
func (cp *ControlPlane) InstallCRD(ctx context.Context) error {
	path, err := CRDFile()
	if err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read PodGroup CRD (run `make crd`): %w", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(b, crd); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	c, err := apiextclient.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	if _, err := c.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create PodGroup CRD: %w", err)
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := c.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				// The discovery document may lag the condition a little.
				_, err := cp.Client.Discovery().ServerResourcesForGroupVersion("scheduling.x-k8s.io/v1alpha1")
				return err == nil, nil
			}
		}
		return false, nil
	})
}
