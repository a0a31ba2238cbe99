package fakeistiod

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// errPending marks a webhook whose Service does not exist yet (the base chart's default validator
// names istiod-<rev> before istiod is installed). Until it exists there is nothing to serve.
var errPending = errors.New("pending")

// IsIstioInjector reports whether a MutatingWebhookConfiguration belongs to Istio injection: labelled
// app=sidecar-injector, istio.io/tag or istio.io/rev.
func IsIstioInjector(labels map[string]string) bool {
	if labels["app"] == "sidecar-injector" {
		return true
	}
	_, tag := labels["istio.io/tag"]
	_, rev := labels["istio.io/rev"]
	return tag || rev
}

// IsIstioValidator reports whether a ValidatingWebhookConfiguration belongs to Istio validation:
// istiod-default-validator, istio-validator-*, or labelled istio.io/rev.
func IsIstioValidator(name string, labels map[string]string) bool {
	if name == "istiod-default-validator" || strings.HasPrefix(name, "istio-validator") {
		return true
	}
	_, rev := labels["istio.io/rev"]
	return rev
}

func revisionOf(labels map[string]string) string {
	if r := labels["istio.io/rev"]; r != "" {
		return r
	}
	return "default"
}

func (s *Server) loop(ctx context.Context) {
	defer close(s.done)
	api := s.opts.Client.AdmissionregistrationV1()
	go s.watch(ctx, func(ctx context.Context) (watch.Interface, error) {
		return api.MutatingWebhookConfigurations().Watch(ctx, metav1.ListOptions{})
	})
	go s.watch(ctx, func(ctx context.Context) (watch.Interface, error) {
		return api.ValidatingWebhookConfigurations().Watch(ctx, metav1.ListOptions{})
	})
	t := time.NewTicker(s.opts.Resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.trigger:
		}
		_ = s.reconcile(ctx)
	}
}

// watch pokes the reconcile loop on every event; it re-opens the watch when it ends.
func (s *Server) watch(ctx context.Context, open func(context.Context) (watch.Interface, error)) {
	for ctx.Err() == nil {
		w, err := open(ctx)
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		for range w.ResultChan() {
			s.poke()
		}
		w.Stop()
	}
}

func (s *Server) poke() {
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

// Sync brings every Istio webhook configuration in line now, retrying (for example after update
// conflicts) until it succeeds or ctx ends. It returns no sooner than Options.Settle after the fake's
// last change, so the API server has picked the change up.
func (s *Server) Sync(ctx context.Context) error {
	for {
		err := s.reconcile(ctx)
		if err == nil {
			s.mu.Lock()
			wait := s.opts.Settle - time.Since(s.changedAt)
			s.mu.Unlock()
			if wait > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(wait):
				}
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fake istiod: webhook configurations not in line: %w", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// reconcile points every Istio webhook at the fake and opens the listeners that needs.
func (s *Server) reconcile(ctx context.Context) error {
	api := s.opts.Client.AdmissionregistrationV1()
	var problems []string
	referenced := map[string]bool{}

	mwcs, err := api.MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return s.setErr(fmt.Errorf("list MutatingWebhookConfigurations: %w", err))
	}
	for i := range mwcs.Items {
		m := &mwcs.Items[i]
		if !IsIstioInjector(m.Labels) {
			continue
		}
		rev, changed := revisionOf(m.Labels), false
		for j := range m.Webhooks {
			c, err := s.point(ctx, &m.Webhooks[j].ClientConfig, "inject", rev, referenced)
			if errors.Is(err, errPending) {
				continue
			}
			if err != nil {
				problems = append(problems, fmt.Sprintf("MutatingWebhookConfiguration %s webhook %s: %v", m.Name, m.Webhooks[j].Name, err))
				continue
			}
			changed = changed || c
		}
		if changed {
			if _, err := api.MutatingWebhookConfigurations().Update(ctx, m, metav1.UpdateOptions{}); err != nil {
				problems = append(problems, fmt.Sprintf("update MutatingWebhookConfiguration %s: %v", m.Name, err))
			} else {
				s.markChanged()
				s.opts.Logf("fake istiod: pointed MutatingWebhookConfiguration %s (revision %s) at the fake", m.Name, rev)
			}
		}
	}

	vwcs, err := api.ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return s.setErr(fmt.Errorf("list ValidatingWebhookConfigurations: %w", err))
	}
	for i := range vwcs.Items {
		v := &vwcs.Items[i]
		if !IsIstioValidator(v.Name, v.Labels) {
			continue
		}
		rev, changed := revisionOf(v.Labels), false
		for j := range v.Webhooks {
			wh := &v.Webhooks[j]
			c, err := s.point(ctx, &wh.ClientConfig, "validate", rev, referenced)
			if errors.Is(err, errPending) {
				continue // failurePolicy stays as the chart set it until the Service exists
			}
			if err != nil {
				problems = append(problems, fmt.Sprintf("ValidatingWebhookConfiguration %s webhook %s: %v", v.Name, wh.Name, err))
				continue
			}
			// istiod's webhook controller switches validation to Fail once it serves it.
			if wh.FailurePolicy == nil || *wh.FailurePolicy != admissionregistrationv1.Fail {
				fail := admissionregistrationv1.Fail
				wh.FailurePolicy = &fail
				c = true
			}
			changed = changed || c
		}
		if changed {
			if _, err := api.ValidatingWebhookConfigurations().Update(ctx, v, metav1.UpdateOptions{}); err != nil {
				problems = append(problems, fmt.Sprintf("update ValidatingWebhookConfiguration %s: %v", v.Name, err))
			} else {
				s.markChanged()
				s.opts.Logf("fake istiod: pointed ValidatingWebhookConfiguration %s (revision %s) at the fake", v.Name, rev)
			}
		}
	}

	if len(problems) == 0 && s.mode == ModeService {
		s.mu.Lock()
		for addr, l := range s.listeners {
			if !referenced[addr] {
				_ = l.srv.Close()
				delete(s.listeners, addr)
				s.opts.Logf("fake istiod: closed %s, no webhook names it any more", addr)
			}
		}
		s.mu.Unlock()
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return s.setErr(errors.New(strings.Join(problems, "; ")))
	}
	return s.setErr(nil)
}

func (s *Server) markChanged() {
	s.mu.Lock()
	s.changedAt = time.Now()
	s.mu.Unlock()
}

func (s *Server) setErr(err error) error {
	s.mu.Lock()
	s.lastErr = err
	s.mu.Unlock()
	return err
}

// LastError returns the outcome of the latest reconcile pass (nil when every webhook was in line).
func (s *Server) LastError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// point makes one clientConfig reach the fake and reports whether it changed it.
func (s *Server) point(ctx context.Context, cc *admissionregistrationv1.WebhookClientConfig, kind, rev string, referenced map[string]bool) (bool, error) {
	ca := s.certs.caPEM
	if s.mode == ModeURL {
		want := s.URLFor(kind, rev)
		if cc.URL != nil && *cc.URL == want && cc.Service == nil && bytes.Equal(cc.CABundle, ca) {
			return false, nil
		}
		cc.URL, cc.Service, cc.CABundle = &want, nil, append([]byte(nil), ca...)
		return true, nil
	}

	if cc.Service == nil {
		if cc.URL != nil && IsLoopbackURL(*cc.URL) {
			return false, nil
		}
		return false, fmt.Errorf("clientConfig has no service reference (url %v); the fake in mode %s serves only services", deref(cc.URL), s.mode)
	}
	addr, svcRev, err := s.serviceAddress(ctx, cc.Service)
	if err != nil {
		return false, err
	}
	if svcRev == "" {
		svcRev = rev
	}
	referenced[addr] = true
	s.mu.Lock()
	l, ok := s.listeners[addr]
	if ok && l.revision != svcRev {
		l.revision = svcRev
	}
	s.mu.Unlock()
	if !ok {
		if _, err := s.listen(addr, svcRev); err != nil {
			return false, err
		}
	}
	if bytes.Equal(cc.CABundle, ca) {
		return false, nil
	}
	cc.CABundle = append([]byte(nil), ca...)
	return true, nil
}

// serviceAddress resolves a webhook's Service to the ClusterIP:port the API server dials, and the
// revision the Service stands for (its istio.io/rev label).
func (s *Server) serviceAddress(ctx context.Context, ref *admissionregistrationv1.ServiceReference) (string, string, error) {
	svc, err := s.opts.Client.CoreV1().Services(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return "", "", fmt.Errorf("%w: Service %s/%s does not exist yet", errPending, ref.Namespace, ref.Name)
		}
		return "", "", err
	}
	return serviceTarget(svc, ref)
}

func serviceTarget(svc *corev1.Service, ref *admissionregistrationv1.ServiceReference) (string, string, error) {
	ip := svc.Spec.ClusterIP
	if ip == "" || ip == corev1.ClusterIPNone {
		return "", "", fmt.Errorf("Service %s/%s has no ClusterIP", svc.Namespace, svc.Name)
	}
	if !IsLoopbackHost(ip) {
		return "", "", fmt.Errorf("Service %s/%s has ClusterIP %s outside the loopback: the API server would dial it; "+
			"start the cluster with a loopback service-cluster-ip-range such as 127.96.0.0/16", svc.Namespace, svc.Name, ip)
	}
	port := int32(443)
	if ref.Port != nil {
		port = *ref.Port
	}
	return net.JoinHostPort(ip, strconv.Itoa(int(port))), svc.Labels["istio.io/rev"], nil
}

// IsLoopbackURL reports whether a webhook URL's host is a loopback address.
func IsLoopbackURL(u string) bool {
	rest := strings.TrimPrefix(u, "https://")
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return IsLoopbackAddr(rest)
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// Verify checks every webhook of every MutatingWebhookConfiguration and ValidatingWebhookConfiguration
// in the cluster (Istio's or not): its target must be a loopback URL or a Service whose ClusterIP is
// loopback. Istio's must also carry the fake's CA and reach one of its listeners. It returns one line
// per problem.
func (s *Server) Verify(ctx context.Context) ([]string, error) {
	targets, err := WebhookTargets(ctx, s.opts.Client)
	if err != nil {
		return nil, err
	}
	addrs := map[string]bool{}
	for _, a := range s.Addresses() {
		addrs[a] = true
	}
	var problems []string
	for _, t := range targets {
		if t.Problem != "" {
			problems = append(problems, t.String()+": "+t.Problem)
			continue
		}
		if !IsLoopbackAddr(t.Address) {
			problems = append(problems, t.String()+": target "+t.Address+" is not a loopback address")
			continue
		}
		if !t.Istio {
			continue
		}
		if !bytes.Equal(t.CABundle, s.certs.caPEM) {
			problems = append(problems, t.String()+": caBundle is not the fake istiod's CA")
		}
		if !addrs[t.Address] {
			problems = append(problems, t.String()+": target "+t.Address+" is not a fake istiod listener")
		}
	}
	sort.Strings(problems)
	return problems, nil
}

// WebhookTarget is where the API server sends one webhook's calls.
type WebhookTarget struct {
	// Kind is MutatingWebhookConfiguration or ValidatingWebhookConfiguration.
	Kind, Config, Webhook string
	// Istio is true for Istio's injectors and validators.
	Istio bool
	// URL or Service as configured; Address is the host:port the API server dials.
	URL, Service, Address string
	CABundle              []byte
	// Problem is set when the target cannot be resolved.
	Problem string
}

func (t WebhookTarget) String() string { return t.Kind + " " + t.Config + " webhook " + t.Webhook }

// WebhookTargets lists the target of every admission webhook in the cluster.
func WebhookTargets(ctx context.Context, c kubernetes.Interface) ([]WebhookTarget, error) {
	var out []WebhookTarget
	add := func(kind, config, webhook string, istio bool, cc admissionregistrationv1.WebhookClientConfig) {
		t := WebhookTarget{Kind: kind, Config: config, Webhook: webhook, Istio: istio, CABundle: cc.CABundle}
		switch {
		case cc.URL != nil:
			t.URL = *cc.URL
			rest := strings.TrimPrefix(t.URL, "https://")
			if i := strings.IndexAny(rest, "/?#"); i >= 0 {
				rest = rest[:i]
			}
			t.Address = rest
		case cc.Service != nil:
			t.Service = cc.Service.Namespace + "/" + cc.Service.Name
			svc, err := c.CoreV1().Services(cc.Service.Namespace).Get(ctx, cc.Service.Name, metav1.GetOptions{})
			if err != nil {
				t.Problem = err.Error()
			} else if addr, _, err := serviceTarget(svc, cc.Service); err != nil {
				t.Problem = err.Error()
			} else {
				t.Address = addr
			}
		default:
			t.Problem = "clientConfig has neither url nor service"
		}
		out = append(out, t)
	}
	mwcs, err := c.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, m := range mwcs.Items {
		for _, w := range m.Webhooks {
			add("MutatingWebhookConfiguration", m.Name, w.Name, IsIstioInjector(m.Labels), w.ClientConfig)
		}
	}
	vwcs, err := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, v := range vwcs.Items {
		for _, w := range v.Webhooks {
			add("ValidatingWebhookConfiguration", v.Name, w.Name, IsIstioValidator(v.Name, v.Labels), w.ClientConfig)
		}
	}
	return out, nil
}
