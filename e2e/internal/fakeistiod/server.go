// Package fakeistiod plays the webhook part of istiod for e2e clusters whose pods never run (kwok).
//
// It serves sidecar injection and config validation on loopback only, with a self-signed CA made at
// start, and keeps every Istio MutatingWebhookConfiguration and ValidatingWebhookConfiguration
// pointed at itself with that CA, also after Helm upgrades or tag moves re-create them. Every call is
// recorded so a suite can prove that no webhook call failed and none left the loopback.
//
// Two modes:
//
//   - ModeService (what istiod itself does): listen on the ClusterIP:port of every istiod Service a
//     webhook names (the cluster must use a loopback Service range such as 127.96.0.0/16) and patch
//     only caBundle. Webhook configurations keep their service references, so Helm upgrades, tag moves
//     and server-side applies of the charts' objects never conflict with the fake. Needs permission to
//     bind port 443 (root, CAP_NET_BIND_SERVICE or net.ipv4.ip_unprivileged_port_start <= 443).
//   - ModeURL: listen on 127.0.0.1:<free port> and rewrite each webhook's clientConfig to
//     url https://127.0.0.1:<port>/inject/<rev> (or /validate/<rev>) plus caBundle. Works unprivileged,
//     but a later Helm upgrade or apply that changes a webhook's service reference is rejected by the
//     API server (url and service together are invalid) until the fake rewrites it again.
package fakeistiod

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
)

// Mode says how the API server reaches the fake.
type Mode string

// Modes.
const (
	// ModeAuto picks ModeService when the process may bind port 443, else ModeURL.
	ModeAuto    Mode = ""
	ModeService Mode = "service"
	ModeURL     Mode = "url"
)

// Options configure Start.
type Options struct {
	// Client reaches the cluster (required).
	Client kubernetes.Interface
	// IstioNamespace holds istiod's Services and ConfigMaps; default istio-system.
	IstioNamespace string
	// Mode, default ModeAuto.
	Mode Mode
	// Resync is how often webhook configurations are re-checked besides watch events; default 2s.
	Resync time.Duration
	// Settle is how long Sync waits after the fake last changed a webhook configuration, so the API
	// server's webhook cache has seen the change before the caller creates pods; default 1s.
	Settle time.Duration
	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any)
}

// Call is one request the fake received (or a TLS handshake that failed).
type Call struct {
	Time time.Time `json:"time"`
	// Kind is "inject", "validate", or "tls" for a failed handshake.
	Kind     string `json:"kind"`
	Path     string `json:"path,omitempty"`
	Revision string `json:"revision,omitempty"`
	// RemoteAddr is the caller (the API server); LocalAddr the address it dialled.
	RemoteAddr string `json:"remoteAddr"`
	LocalAddr  string `json:"localAddr,omitempty"`
	// Operation, Resource, Namespace and Name describe the admission request.
	Operation string `json:"operation,omitempty"`
	Resource  string `json:"resource,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Allowed   bool   `json:"allowed"`
	// Mutated is true when an injection patch was returned.
	Mutated bool `json:"mutated,omitempty"`
	// Error is set when the call could not be served as istiod would.
	Error string `json:"error,omitempty"`
}

// Server is a running fake istiod.
type Server struct {
	opts  Options
	mode  Mode
	certs *certs

	mu        sync.Mutex
	calls     []Call
	listeners map[string]*listener // by address
	lastErr   error
	changedAt time.Time // last time the fake updated a webhook configuration
	urlBase   string    // ModeURL: https://127.0.0.1:<port>

	trigger chan struct{}
	cancel  context.CancelFunc
	done    chan struct{}
}

type listener struct {
	addr     string
	revision string // ModeService: the revision behind the Service (guarded by Server.mu); ModeURL: ""
	srv      *http.Server
}

// Start generates the CA, opens the listeners it can open now and starts keeping the webhook
// configurations pointed at the fake. It returns once the first pass is done; call Sync to wait for
// configurations created later.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Client == nil {
		return nil, errors.New("fakeistiod: Options.Client is required")
	}
	if opts.IstioNamespace == "" {
		opts.IstioNamespace = "istio-system"
	}
	if opts.Resync <= 0 {
		opts.Resync = 2 * time.Second
	}
	if opts.Settle <= 0 {
		opts.Settle = time.Second
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	mode := opts.Mode
	if mode == ModeAuto {
		mode = ModeURL
		if CanBindPrivilegedPorts() {
			mode = ModeService
		}
	}
	if mode != ModeService && mode != ModeURL {
		return nil, fmt.Errorf("fakeistiod: unknown mode %q (want %q or %q)", mode, ModeService, ModeURL)
	}
	ns := opts.IstioNamespace
	c, err := newCerts(
		[]string{"istiod." + ns + ".svc", "*." + ns + ".svc", "*." + ns + ".svc.cluster.local", "localhost"},
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	)
	if err != nil {
		return nil, fmt.Errorf("fakeistiod: %w", err)
	}
	s := &Server{
		opts:      opts,
		mode:      mode,
		certs:     c,
		listeners: map[string]*listener{},
		trigger:   make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	if mode == ModeURL {
		l, err := s.listen("127.0.0.1:0", "")
		if err != nil {
			return nil, err
		}
		s.urlBase = "https://" + l.addr
	}
	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	_ = s.reconcile(ctx) // errors are kept in lastErr and retried by the loop
	go s.loop(loopCtx)
	opts.Logf("fake istiod: mode %s, CA generated, watching webhook configurations", mode)
	return s, nil
}

// CanBindPrivilegedPorts reports whether this process may listen on port 443.
func CanBindPrivilegedPorts() bool {
	if os.Geteuid() == 0 {
		return true
	}
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_unprivileged_port_start")
	if err != nil {
		return false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return err == nil && n <= 443
}

// Mode returns the mode in use.
func (s *Server) Mode() Mode { return s.mode }

// URLFor returns the clientConfig.url the fake writes for a webhook kind ("inject" or "validate")
// and revision in ModeURL, and "" in ModeService (where webhooks keep their Service).
func (s *Server) URLFor(kind, rev string) string {
	if s.mode != ModeURL {
		return ""
	}
	return s.urlBase + "/" + kind + "/" + rev
}

// CABundle returns the PEM CA the webhook configurations must carry.
func (s *Server) CABundle() []byte { return append([]byte(nil), s.certs.caPEM...) }

// Addresses returns the addresses the fake listens on, sorted.
func (s *Server) Addresses() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for a := range s.listeners {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// Calls returns every recorded call, oldest first.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Failures returns the calls that were not served as istiod would serve them.
func (s *Server) Failures() []Call {
	var out []Call
	for _, c := range s.Calls() {
		if c.Error != "" {
			out = append(out, c)
		}
	}
	return out
}

// NonLoopback returns the calls whose caller or dialled address is not a loopback address.
func (s *Server) NonLoopback() []Call {
	var out []Call
	for _, c := range s.Calls() {
		if !IsLoopbackAddr(c.RemoteAddr) || (c.LocalAddr != "" && !IsLoopbackAddr(c.LocalAddr)) {
			out = append(out, c)
		}
	}
	return out
}

// Stop closes the listeners and stops the reconcile loop. Webhook configurations are left as they are.
func (s *Server) Stop() {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for a, l := range s.listeners {
		_ = l.srv.Close()
		delete(s.listeners, a)
	}
}

func (s *Server) record(c Call) {
	if c.Time.IsZero() {
		c.Time = time.Now()
	}
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
	if c.Error != "" {
		s.opts.Logf("fake istiod: FAILED %s %s %s/%s from %s: %s", c.Kind, c.Path, c.Namespace, c.Name, c.RemoteAddr, c.Error)
	}
}

// listen opens a TLS listener on addr serving revision rev (ModeService) or revisions from the path.
func (s *Server) listen(addr, rev string) (*listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("fakeistiod: listen %q: %w", addr, err)
	}
	if !IsLoopbackHost(host) {
		return nil, fmt.Errorf("fakeistiod: refusing to listen on non-loopback address %s", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fakeistiod: listen %s: %w", addr, err)
	}
	l := &listener{addr: ln.Addr().String(), revision: rev}
	mux := http.NewServeMux()
	mux.HandleFunc("/inject", func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, "inject", l) })
	mux.HandleFunc("/inject/", func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, "inject", l) })
	mux.HandleFunc("/validate", func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, "validate", l) })
	mux.HandleFunc("/validate/", func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, "validate", l) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.record(Call{Kind: "unknown", Path: r.URL.Path, RemoteAddr: r.RemoteAddr, LocalAddr: l.addr,
			Error: "no such webhook path"})
		http.NotFound(w, r)
	})
	l.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{s.certs.server}, MinVersion: tls.VersionTLS12},
		ErrorLog:          log.New(&errorLog{s: s, addr: l.addr}, "", 0),
	}
	go func() { _ = l.srv.ServeTLS(ln, "", "") }()
	s.mu.Lock()
	s.listeners[l.addr] = l
	s.mu.Unlock()
	s.opts.Logf("fake istiod: listening on %s (revision %q)", l.addr, rev)
	return l, nil
}

// errorLog turns http.Server errors (mostly failed TLS handshakes) into failed calls.
type errorLog struct {
	s    *Server
	addr string
}

func (e *errorLog) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	// "http: TLS handshake error from 127.0.0.1:4242: remote error: tls: bad certificate"
	remote := ""
	if i := strings.Index(msg, " from "); i >= 0 {
		remote = msg[i+len(" from "):]
		if k := strings.Index(remote, ": "); k >= 0 {
			remote = remote[:k]
		}
	}
	e.s.record(Call{Kind: "tls", RemoteAddr: remote, LocalAddr: e.addr, Error: msg})
	return len(p), nil
}

var _ io.Writer = (*errorLog)(nil)

// IsLoopbackAddr reports whether a "host:port" (or bare host) is a loopback address.
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return IsLoopbackHost(host)
}

// IsLoopbackHost reports whether host is "localhost" or an IP in 127.0.0.0/8 or ::1.
func IsLoopbackHost(host string) bool {
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
