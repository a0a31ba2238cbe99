package fakeistiod

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// serve answers one AdmissionReview. kind is "inject" or "validate".
func (s *Server) serve(w http.ResponseWriter, r *http.Request, kind string, l *listener) {
	call := Call{Time: time.Now(), Kind: kind, Path: r.URL.Path, RemoteAddr: r.RemoteAddr, LocalAddr: l.addr}
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		call.LocalAddr = a.String()
	}
	s.mu.Lock()
	call.Revision = l.revision
	s.mu.Unlock()
	if l.revision == "" { // ModeURL: /inject/<rev>, /validate/<rev>
		call.Revision = strings.Trim(strings.TrimPrefix(r.URL.Path, "/"+kind), "/")
	}
	fail := func(code int, err error) {
		call.Error = err.Error()
		s.record(call)
		http.Error(w, err.Error(), code)
	}
	if r.Method != http.MethodPost {
		fail(http.StatusMethodNotAllowed, fmt.Errorf("method %s", r.Method))
		return
	}
	if call.Revision == "" {
		fail(http.StatusNotFound, fmt.Errorf("no revision in path %q", r.URL.Path))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		fail(http.StatusBadRequest, fmt.Errorf("read body: %w", err))
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		fail(http.StatusBadRequest, fmt.Errorf("not an AdmissionReview: %v", err))
		return
	}
	req := review.Request
	call.Operation = string(req.Operation)
	call.Resource = req.Resource.Resource
	call.Namespace = req.Namespace
	call.Name = req.Name

	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if kind == "inject" {
		patch, err := s.inject(r.Context(), req, call.Revision)
		if err != nil {
			// istiod refuses the pod when injection fails; so does the fake (and records it).
			call.Error = err.Error()
			resp.Allowed = false
			resp.Result = &metav1.Status{Status: metav1.StatusFailure, Message: "injection failed: " + err.Error()}
		} else if patch != nil {
			pt := admissionv1.PatchTypeJSONPatch
			resp.Patch, resp.PatchType = patch, &pt
			call.Mutated = true
		}
		if call.Name == "" {
			var meta struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			if json.Unmarshal(req.Object.Raw, &meta) == nil {
				call.Name = meta.Metadata.GenerateName + "*"
			}
		}
	}
	call.Allowed = resp.Allowed
	out, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
	if err != nil {
		fail(http.StatusInternalServerError, err)
		return
	}
	s.record(call)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

func (s *Server) inject(ctx context.Context, req *admissionv1.AdmissionRequest, rev string) ([]byte, error) {
	if req.Resource.Resource != "pods" || req.Operation != admissionv1.Create {
		return nil, nil
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return nil, fmt.Errorf("decode pod: %w", err)
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}
	rc, err := s.revisionConfig(ctx, rev)
	if err != nil {
		return nil, err
	}
	patch, changed, err := InjectionPatch(&pod, rc)
	if err != nil || !changed {
		return nil, err
	}
	return patch, nil
}

// revisionConfig reads the revision's injector values and mesh config, as istiod does. It is read on
// every call (no cache) so an in-place Helm upgrade that changes hub or tag is seen at once.
func (s *Server) revisionConfig(ctx context.Context, rev string) (RevisionConfig, error) {
	suffix := ""
	if rev != "default" {
		suffix = "-" + rev
	}
	ns := s.opts.IstioNamespace
	cms := s.opts.Client.CoreV1().ConfigMaps(ns)
	inj, err := cms.Get(ctx, "istio-sidecar-injector"+suffix, metav1.GetOptions{})
	if err != nil {
		return RevisionConfig{}, fmt.Errorf("revision %q: ConfigMap %s/istio-sidecar-injector%s: %w", rev, ns, suffix, err)
	}
	mesh := ""
	if cm, err := cms.Get(ctx, "istio"+suffix, metav1.GetOptions{}); err == nil {
		mesh = cm.Data["mesh"]
	} else if !apierrors.IsNotFound(err) {
		return RevisionConfig{}, fmt.Errorf("revision %q: ConfigMap %s/istio%s: %w", rev, ns, suffix, err)
	}
	return ParseRevisionConfig(rev, inj.Data["values"], mesh)
}
