package execute

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sort"
	"strings"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// transient reports whether an error is worth trying again: conflicts, throttling, server errors,
// timeouts and broken connections.
func transient(err error) bool {
	if err == nil {
		return false
	}
	switch {
	case apierrors.IsConflict(err), apierrors.IsTooManyRequests(err), apierrors.IsInternalError(err),
		apierrors.IsServerTimeout(err), apierrors.IsTimeout(err), apierrors.IsServiceUnavailable(err),
		apierrors.IsUnexpectedServerError(err):
		return true
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED):
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) && se.Status().Code >= 500 {
		return true
	}
	return false
}

// retry runs fn until it succeeds, fails with an error that is not transient, the context ends, or
// Options.MaxAttempts attempts were made; it waits between attempts on the Clock, doubling the wait.
func (e *engine) retry(ctx context.Context, what string, fn func(context.Context) error) error {
	b := e.backoff()
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil || !transient(err) || ctx.Err() != nil {
			return err
		}
		if attempt >= e.opts.MaxAttempts {
			return fmt.Errorf("%s: gave up after %d attempts: %w", what, attempt, err)
		}
		delay := b.Step()
		e.log.Debug("transient error, retrying", "call", what, "attempt", attempt, "wait", delay, "error", err)
		e.emit(Event{Type: EventRetry, Message: fmt.Sprintf("%s: attempt %d failed, retrying in %s", what, attempt, delay), Err: err})
		if err := sleep(ctx, e.clock, delay); err != nil {
			return err
		}
	}
}

// backoff is the wait between attempts: Options.RetryBackoff, doubled each time up to 30 seconds,
// without jitter (runs on a fake clock are deterministic).
func (e *engine) backoff() *wait.Backoff {
	return &wait.Backoff{Duration: e.opts.RetryBackoff, Factor: 2, Cap: maxRetryBackoff, Steps: math.MaxInt32}
}

// applyConfig turns a typed object into an apply configuration, without the zero-valued fields a
// typed object always carries (creationTimestamp, empty status).
func applyConfig(obj runtime.Object) runtime.ApplyConfiguration {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil { // typed client-go objects always convert
		panic(err)
	}
	if md, ok := m["metadata"].(map[string]any); ok && md["creationTimestamp"] == nil {
		delete(md, "creationTimestamp")
	}
	if st, ok := m["status"].(map[string]any); ok && len(st) == 0 {
		delete(m, "status")
	}
	return client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: m})
}

// jsonCopy deep-copies a JSON-like map through encoding/json, so any Go value a planner put in it
// ends up as plain JSON types.
func jsonCopy(m map[string]any) (map[string]any, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func sortStrings(s []string) { sort.Strings(s) }

// imageTag returns the tag of an image reference ("docker.io/istio/ztunnel:1.31.4-distroless" →
// "1.31.4-distroless"), without any digest; "" when there is none.
func imageTag(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	slash := strings.LastIndex(image, "/")
	colon := strings.LastIndex(image, ":")
	if colon <= slash {
		return ""
	}
	return image[colon+1:]
}

// tagMatches reports whether an image tag is the version, with or without a variant suffix
// ("1.31.4", "1.31.4-distroless").
func tagMatches(tag, version string) bool {
	return tag == version || strings.HasPrefix(tag, version+"-")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
