package execute

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

func (e *engine) helmClient() (HelmClient, error) {
	if e.helm == nil {
		return nil, errors.New("Options.Helm is nil but the plan has Helm steps; pass a HelmClient (helmsdk.New)")
	}
	return e.helm, nil
}

// helmGet returns the release, or nil when it does not exist.
func (e *engine) helmGet(ctx context.Context, name, ns string) (*Release, error) {
	hc, err := e.helmClient()
	if err != nil {
		return nil, err
	}
	var rel *Release
	err = e.retry(ctx, "helm get "+ns+"/"+name, func(ctx context.Context) error {
		var err error
		rel, err = hc.Get(ctx, name, ns)
		if errors.Is(err, ErrReleaseNotFound) {
			rel = nil
			return nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read Helm release %s/%s: %w", ns, name, err)
	}
	return rel, nil
}

// helmAct runs a Helm write. After an error it asks tookEffect whether the write happened anyway (a
// lost response); if so the error is forgotten, otherwise transient errors are retried.
func (e *engine) helmAct(ctx context.Context, what string, do func(context.Context) error, tookEffect func(context.Context) bool) error {
	delay := e.opts.RetryBackoff
	for attempt := 1; ; attempt++ {
		err := do(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if tookEffect(ctx) {
			e.log.Warn("Helm reported an error but the change took effect", "call", what, "error", err)
			return nil
		}
		if !transient(err) || attempt >= e.opts.MaxAttempts {
			return fmt.Errorf("%s (attempt %d): %w", what, attempt, err)
		}
		e.emit(Event{Type: EventRetry, Message: fmt.Sprintf("%s: attempt %d failed, retrying in %s", what, attempt, delay), Err: err})
		if err := sleep(ctx, e.clock, delay); err != nil {
			return err
		}
		delay = min(delay*2, maxRetryBackoff)
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func chartLabel(r *Release) string {
	return fmt.Sprintf("%s-%s #%d", r.Chart, r.ChartVersion, r.Revision)
}

// stuck explains a release left in a pending state by an interrupted Helm operation; Helm refuses
// every change until someone looks at it.
func stuck(r *Release) error {
	if r == nil || !strings.HasPrefix(r.Status, "pending-") {
		return nil
	}
	return fmt.Errorf("Helm release %s/%s is stuck in status %s (an interrupted Helm operation); look at it (helm history -n %s %s), roll it back or fix it, then run again",
		r.Namespace, r.Name, r.Status, r.Namespace, r.Name)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
