package devenv

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/client-go/tools/clientcmd"
)

// Proxy is a loopback TCP proxy in front of the API server. Cut makes the API server
// unreachable for the clients that go through it (every connection drops, new ones are
// refused); Restore brings it back on the same address.
type Proxy struct {
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
}

// NewProxy listens on a free loopback port and forwards to target (host:port).
func NewProxy(target string) (*Proxy, error) {
	p := &Proxy{target: target, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.addr }

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

func (p *Proxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *Proxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.track(c, true)
	p.track(up, true)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	p.track(c, false)
	p.track(up, false)
}

// Cut closes the listener and every proxied connection.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
}

// Restore listens again on the same address.
func (p *Proxy) Restore() error {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return fmt.Errorf("re-listen on %s: %w", p.addr, err)
	}
	p.serve(ln)
	return nil
}

// KubeConfigVia writes a copy of the admin kubeconfig whose server goes through addr and
// returns its path.
func (cp *ControlPlane) KubeConfigVia(addr string) (string, error) {
	cfg, err := clientcmd.Load(cp.Env.KubeConfig)
	if err != nil {
		return "", err
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + addr
	}
	path := filepath.Join(cp.Dir, "kubeconfig-via-"+filepath.Base(addr))
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, b, 0o600)
}
