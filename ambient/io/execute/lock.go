package execute

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LockName is the name of the coordination.k8s.io/v1 Lease that serialises runs.
const LockName = "ambientkit-lock"

// annotationPlan on the Lease names the plan the holder runs.
const annotationPlan = "ambientkit.io/plan"

// lease holds the Lease for one run, renewing it whenever a third of its duration has passed.
type lease struct {
	e        *engine
	plan     string
	acquired bool
	renewed  time.Time
	// cur is the Lease as this run last wrote it: a renewal updates it without reading it first
	// (an update of a Lease someone else wrote since fails with a conflict, and is read then).
	cur *coordinationv1.Lease
}

// acquire takes the Lease, or returns ErrLocked naming the holder while another run holds it.
func (e *engine) acquire(ctx context.Context, planHash string) (*lease, error) {
	l := &lease{e: e, plan: shortHash(planHash)}
	err := e.retry(ctx, "take Lease "+e.opts.Namespace+"/"+LockName, func(ctx context.Context) error {
		return l.take(ctx)
	})
	if err != nil {
		return nil, err
	}
	l.acquired = true
	e.log.Debug("lease taken", "lease", LockName, "namespace", e.opts.Namespace, "holder", e.opts.Identity)
	return l, nil
}

func (l *lease) take(ctx context.Context) error {
	e := l.e
	now := e.clock.Now()
	var cur coordinationv1.Lease
	key := client.ObjectKey{Namespace: e.opts.Namespace, Name: LockName}
	err := e.c.Get(ctx, key, &cur)
	if apierrors.IsNotFound(err) {
		nl := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LockName, Namespace: e.opts.Namespace,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "ambientkit"},
			Annotations: map[string]string{annotationPlan: l.plan}}}
		l.fill(nl, now, true)
		err := e.c.Create(ctx, nl, client.FieldOwner(e.opts.FieldOwner))
		if apierrors.IsAlreadyExists(err) {
			return apierrors.NewConflict(coordinationv1.Resource("leases"), LockName, err) // raced: look again
		}
		if err != nil {
			return fmt.Errorf("create Lease %s: %w", key, err)
		}
		l.renewed, l.cur = now, nl.DeepCopy()
		return nil
	}
	if err != nil {
		return fmt.Errorf("read Lease %s: %w", key, err)
	}
	holder := ptr.Deref(cur.Spec.HolderIdentity, "")
	if holder != "" && holder != e.opts.Identity && !expired(&cur, now) {
		return l.lockedErr(&cur, now)
	}
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	cur.Annotations[annotationPlan] = l.plan
	l.fill(&cur, now, holder != e.opts.Identity)
	if err := e.c.Update(ctx, &cur, client.FieldOwner(e.opts.FieldOwner)); err != nil {
		return fmt.Errorf("take Lease %s: %w", key, err)
	}
	l.renewed, l.cur = now, cur.DeepCopy()
	return nil
}

func (l *lease) lockedErr(cur *coordinationv1.Lease, now time.Time) error {
	renew := "never"
	until := "unknown"
	if cur.Spec.RenewTime != nil {
		renew = cur.Spec.RenewTime.Time.UTC().Format(time.RFC3339)
		until = cur.Spec.RenewTime.Add(time.Duration(ptr.Deref(cur.Spec.LeaseDurationSeconds, 0)) * time.Second).UTC().Format(time.RFC3339)
	}
	return fmt.Errorf("%w: Lease %s/%s is held by %q (plan %s, renewed %s, expires %s unless renewed); wait for that run to finish, or if it died delete the Lease (kubectl -n %s delete lease %s)",
		ErrLocked, cur.Namespace, cur.Name, ptr.Deref(cur.Spec.HolderIdentity, ""), cur.Annotations[annotationPlan], renew, until, cur.Namespace, cur.Name)
}

func (l *lease) fill(le *coordinationv1.Lease, now time.Time, newHolder bool) {
	e := l.e
	t := metav1.NewMicroTime(now)
	le.Spec.HolderIdentity = ptr.To(e.opts.Identity)
	le.Spec.LeaseDurationSeconds = ptr.To(int32(e.opts.LeaseDuration / time.Second))
	le.Spec.RenewTime = &t
	if newHolder {
		le.Spec.AcquireTime = &t
		le.Spec.LeaseTransitions = ptr.To(ptr.Deref(le.Spec.LeaseTransitions, 0) + 1)
	}
}

func expired(le *coordinationv1.Lease, now time.Time) bool {
	if le.Spec.RenewTime == nil || le.Spec.LeaseDurationSeconds == nil {
		return true
	}
	return now.After(le.Spec.RenewTime.Add(time.Duration(*le.Spec.LeaseDurationSeconds) * time.Second))
}

// renew extends the Lease when a third of its duration has passed. It fails with ErrLocked when
// another run took the Lease over (this run was stalled past the Lease's expiry).
func (l *lease) renew(ctx context.Context) error {
	if l == nil || !l.acquired {
		return nil
	}
	e := l.e
	if e.clock.Now().Sub(l.renewed) < e.opts.LeaseDuration/3 {
		return nil
	}
	return e.retry(ctx, "renew Lease "+e.opts.Namespace+"/"+LockName, func(ctx context.Context) error {
		now := e.clock.Now()
		if l.cur != nil { // as this run last wrote it: the update fails if anyone wrote it since
			cur := l.cur.DeepCopy()
			l.fill(cur, now, false)
			err := e.c.Update(ctx, cur, client.FieldOwner(e.opts.FieldOwner))
			if err == nil {
				l.renewed, l.cur = now, cur
				return nil
			}
			if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				return err
			}
			l.cur = nil // someone else wrote it (or deleted it): read it
			if apierrors.IsConflict(err) {
				return err // retried, reading it first
			}
		}
		var cur coordinationv1.Lease
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.opts.Namespace, Name: LockName}, &cur); err != nil {
			if apierrors.IsNotFound(err) {
				return l.take(ctx)
			}
			return err
		}
		if h := ptr.Deref(cur.Spec.HolderIdentity, ""); h != e.opts.Identity {
			return fmt.Errorf("lost the lock: %w", l.lockedErr(&cur, now))
		}
		l.fill(&cur, now, false)
		if err := e.c.Update(ctx, &cur, client.FieldOwner(e.opts.FieldOwner)); err != nil {
			return err
		}
		l.renewed, l.cur = now, cur.DeepCopy()
		return nil
	})
}

// release gives the Lease up (clears the holder) if this run still holds it. It runs even when the
// run's context was cancelled. It tries once: a Lease that cannot be released expires on its own.
func (l *lease) release(ctx context.Context) {
	if l == nil || !l.acquired {
		return
	}
	e := l.e
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := func() error {
		var cur coordinationv1.Lease
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.opts.Namespace, Name: LockName}, &cur); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		if ptr.Deref(cur.Spec.HolderIdentity, "") != e.opts.Identity {
			return nil
		}
		cur.Spec.HolderIdentity = nil
		cur.Spec.RenewTime = nil
		return e.c.Update(ctx, &cur, client.FieldOwner(e.opts.FieldOwner))
	}()
	if err != nil && !errors.Is(err, context.Canceled) {
		e.log.Warn("could not release the lease; it expires on its own", "lease", LockName, "namespace", e.opts.Namespace, "error", err)
	}
	l.acquired = false
}
