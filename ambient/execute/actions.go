package execute

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
)

// outcome is what one unit of an action did.
type outcome struct {
	finished   bool
	progress   string
	retryAfter time.Duration
	changes    []string
	done, of   int
}

func finished(changes ...string) outcome { return outcome{finished: true, changes: changes} }

// act runs one unit of the step's action. The switch is exhaustive over plan.Kind.
func (e *Executor) act(ctx context.Context, r *run, st *plan.Step, rec *StepRecord) (outcome, error) {
	switch st.Kind() {
	case plan.KindHelmInstall:
		return e.helmInstall(ctx, r, rec, st.HelmInstall)
	case plan.KindHelmUpgrade:
		return e.helmUpgrade(ctx, r, rec, st.HelmUpgrade)
	case plan.KindHelmUninstall:
		return e.helmUninstall(ctx, r, st, rec, st.HelmUninstall)
	case plan.KindHelmRollback:
		return e.helmRollback(ctx, r, rec, st.HelmRollback)
	case plan.KindApplyObject:
		return e.applyObjects(ctx, r, []map[string]any{st.ApplyObject.Object})
	case plan.KindMoveTag:
		if len(st.MoveTag.Objects) == 0 {
			return outcome{}, fmt.Errorf("moveTag of tag %q carries no rendered objects; re-plan with a planner that renders them", st.MoveTag.Tag)
		}
		return e.applyObjects(ctx, r, st.MoveTag.Objects)
	case plan.KindDeleteObject:
		return e.deleteObject(ctx, r, st.DeleteObject)
	case plan.KindPatchLabels:
		return e.patchLabels(ctx, r, st.PatchLabels)
	case plan.KindCordon:
		return e.setUnschedulable(ctx, r, st.Cordon.Node, true)
	case plan.KindUncordon:
		return e.setUnschedulable(ctx, r, st.Uncordon.Node, false)
	case plan.KindDrain:
		return e.drain(ctx, r, st, rec, st.Drain)
	case plan.KindDeletePod:
		return e.deletePods(ctx, r, rec, st.DeletePod)
	case plan.KindRestart:
		return e.restart(ctx, r, st, rec, st.Restart)
	case plan.KindWaitFor:
		return e.waitFor(ctx, r, st, rec, st.WaitFor)
	case plan.KindVerify:
		return e.verify(ctx, r, st, st.Verify)
	case plan.KindBackup:
		return e.backup(ctx, r, st, rec, st.Backup)
	case plan.KindApproval:
		return e.approval(ctx, r, st)
	case plan.KindHealthGate:
		return e.healthGate(ctx, r, st, rec, st.HealthGate)
	}
	return outcome{}, fmt.Errorf("the step has no action this executor knows (kind %q); upgrade ambientkit or re-plan", st.Kind())
}

// ---- Helm ----

func (e *Executor) helmClient() (HelmClient, error) {
	if e.helm == nil {
		return nil, errors.New("Options.Helm is nil but the plan has Helm steps; pass a HelmClient (helmsdk.New)")
	}
	return e.helm, nil
}

// helmGet returns the release, or nil when it does not exist.
func (e *Executor) helmGet(ctx context.Context, name, ns string) (*Release, error) {
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
func (e *Executor) helmAct(ctx context.Context, what string, do func(context.Context) error, tookEffect func(context.Context) bool) error {
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

func (e *Executor) helmInstall(ctx context.Context, r *run, rec *StepRecord, h *plan.HelmRelease) (outcome, error) {
	hc, err := e.helmClient()
	if err != nil {
		return outcome{}, err
	}
	name := h.Namespace + "/" + h.Release
	req := HelmRequest{Release: h.Release, Namespace: h.Namespace, Chart: h.Chart, Values: h.Values, ReuseValues: h.ReuseValues, DryRun: r.dry}
	cur, err := e.helmGet(ctx, h.Release, h.Namespace)
	if err != nil {
		return outcome{}, err
	}
	if cur != nil {
		attempted := rec.State["helmInstallAttempted"] == "true"
		switch {
		case atTarget(cur, req), attempted && cur.Status == "deployed" && cur.ChartVersion == h.Chart.Version:
			return finished(fmt.Sprintf("Helm release %s is installed at chart %s", name, chartLabel(cur))), nil
		case attempted:
			return outcome{}, fmt.Errorf("Helm release %s exists with status %q after an earlier attempt of this step; look at it (helm status -n %s %s), uninstall it and run again",
				name, cur.Status, h.Namespace, h.Release)
		}
		return outcome{}, fmt.Errorf("Helm release %s already exists (chart %s, %s); the plan installs it fresh: re-plan from a fresh snapshot", name, chartLabel(cur), cur.Status)
	}
	if r.dry {
		if _, err := hc.Install(ctx, req); err != nil {
			return outcome{}, fmt.Errorf("helm install %s (dry run): %w", name, err)
		}
		return finished(fmt.Sprintf("would install Helm release %s from chart %s %s", name, h.Chart.Name, h.Chart.Version)), nil
	}
	rec.State["helmInstallAttempted"] = "true"
	if err := e.save(ctx, r); err != nil {
		return outcome{}, err
	}
	err = e.helmAct(ctx, "helm install "+name, func(ctx context.Context) error {
		_, err := hc.Install(ctx, req)
		return err
	}, func(ctx context.Context) bool {
		rel, err := hc.Get(ctx, h.Release, h.Namespace)
		return err == nil && rel.Status == "deployed" && (h.Chart.Version == "" || rel.ChartVersion == h.Chart.Version)
	})
	if err != nil {
		return outcome{}, err
	}
	return finished(fmt.Sprintf("installed Helm release %s from chart %s %s", name, h.Chart.Name, h.Chart.Version)), nil
}

func (e *Executor) helmUpgrade(ctx context.Context, r *run, rec *StepRecord, h *plan.HelmRelease) (outcome, error) {
	hc, err := e.helmClient()
	if err != nil {
		return outcome{}, err
	}
	name := h.Namespace + "/" + h.Release
	req := HelmRequest{Release: h.Release, Namespace: h.Namespace, Chart: h.Chart, Values: h.Values, ReuseValues: h.ReuseValues, DryRun: r.dry}
	cur, err := e.helmGet(ctx, h.Release, h.Namespace)
	if err != nil {
		return outcome{}, err
	}
	if cur == nil {
		return outcome{}, fmt.Errorf("Helm release %s does not exist; the plan upgrades it: install it first or re-plan", name)
	}
	if err := stuck(cur); err != nil {
		return outcome{}, err
	}
	if atTarget(cur, req) {
		return finished(fmt.Sprintf("Helm release %s is already at chart %s with the planned values; nothing to do", name, chartLabel(cur))), nil
	}
	if b, ok := rec.State["helmRevisionBefore"]; ok && cur.Revision > atoi(b) && cur.Status == "deployed" &&
		(h.Chart.Version == "" || cur.ChartVersion == h.Chart.Version) {
		return finished(fmt.Sprintf("an earlier attempt upgraded Helm release %s to chart %s", name, chartLabel(cur))), nil
	}
	diff := valueDiff(h.Values, cur.Values)
	if r.dry {
		if _, err := hc.Upgrade(ctx, req); err != nil {
			return outcome{}, fmt.Errorf("helm upgrade %s (dry run): %w", name, err)
		}
		return finished(fmt.Sprintf("would upgrade Helm release %s from chart %s to %s %s (values that change: %s)",
			name, chartLabel(cur), h.Chart.Name, h.Chart.Version, orNone(diff))), nil
	}
	if _, ok := rec.State["helmRevisionBefore"]; !ok {
		rec.State["helmRevisionBefore"] = strconv.Itoa(cur.Revision)
		if err := e.save(ctx, r); err != nil {
			return outcome{}, err
		}
	}
	before := atoi(rec.State["helmRevisionBefore"])
	err = e.helmAct(ctx, "helm upgrade "+name, func(ctx context.Context) error {
		_, err := hc.Upgrade(ctx, req)
		return err
	}, func(ctx context.Context) bool {
		rel, err := hc.Get(ctx, h.Release, h.Namespace)
		return err == nil && rel.Revision > before && rel.Status == "deployed" && (h.Chart.Version == "" || rel.ChartVersion == h.Chart.Version)
	})
	if err != nil {
		return outcome{}, err
	}
	return finished(fmt.Sprintf("upgraded Helm release %s from chart %s to %s %s (values that changed: %s)",
		name, chartLabel(cur), h.Chart.Name, h.Chart.Version, orNone(diff))), nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func (e *Executor) helmUninstall(ctx context.Context, r *run, st *plan.Step, rec *StepRecord, u *plan.HelmUninstall) (outcome, error) {
	hc, err := e.helmClient()
	if err != nil {
		return outcome{}, err
	}
	name := u.Namespace + "/" + u.Release
	ref := mesh.ObjectRef{Kind: "HelmRelease", Namespace: u.Namespace, Name: u.Release}
	cur, err := e.helmGet(ctx, u.Release, u.Namespace)
	if err != nil {
		return outcome{}, err
	}
	var note string
	switch {
	case r.dry && u.BackupStep != "":
		note = fmt.Sprintf(" after checking the backup written by step %s", u.BackupStep)
	case r.dry:
		note = " after backing it up"
	case u.BackupStep != "":
		if err := e.requireBackup(ctx, r, u.BackupStep, ref); err != nil {
			return outcome{}, err
		}
	default:
		// A rollback that removes what the plan installed names no backup step: back it up here.
		if err := e.autoBackup(ctx, r, st, rec, BackupEntry{Ref: ref, Release: cur, Missing: cur == nil}); err != nil {
			return outcome{}, err
		}
	}
	if cur == nil {
		return finished(fmt.Sprintf("Helm release %s is not installed; nothing to uninstall", name)), nil
	}
	req := HelmUninstallRequest{Release: u.Release, Namespace: u.Namespace, DryRun: r.dry}
	if r.dry {
		if err := hc.Uninstall(ctx, req); err != nil {
			return outcome{}, fmt.Errorf("helm uninstall %s (dry run): %w", name, err)
		}
		return finished(fmt.Sprintf("would uninstall Helm release %s (chart %s)%s", name, chartLabel(cur), note)), nil
	}
	err = e.helmAct(ctx, "helm uninstall "+name, func(ctx context.Context) error {
		return hc.Uninstall(ctx, req)
	}, func(ctx context.Context) bool {
		_, err := hc.Get(ctx, u.Release, u.Namespace)
		return errors.Is(err, ErrReleaseNotFound)
	})
	if err != nil {
		return outcome{}, err
	}
	return finished(fmt.Sprintf("uninstalled Helm release %s (chart %s)", name, chartLabel(cur))), nil
}

func (e *Executor) helmRollback(ctx context.Context, r *run, rec *StepRecord, h *plan.HelmRollback) (outcome, error) {
	hc, err := e.helmClient()
	if err != nil {
		return outcome{}, err
	}
	name := h.Namespace + "/" + h.Release
	cur, err := e.helmGet(ctx, h.Release, h.Namespace)
	if err != nil {
		return outcome{}, err
	}
	if cur == nil {
		return outcome{}, fmt.Errorf("Helm release %s does not exist; there is nothing to roll back", name)
	}
	if err := stuck(cur); err != nil {
		return outcome{}, err
	}
	if b, ok := rec.State["helmRevisionBefore"]; ok && cur.Revision > atoi(b) && cur.Status == "deployed" {
		return finished(fmt.Sprintf("an earlier attempt rolled Helm release %s back to revision %d (now %s)", name, h.Revision, chartLabel(cur))), nil
	}
	if cur.Revision == h.Revision && cur.Status == "deployed" {
		return finished(fmt.Sprintf("Helm release %s is already at revision %d", name, h.Revision)), nil
	}
	req := HelmRollbackRequest{Release: h.Release, Namespace: h.Namespace, Revision: h.Revision, DryRun: r.dry}
	if r.dry {
		if err := hc.Rollback(ctx, req); err != nil {
			return outcome{}, fmt.Errorf("helm rollback %s (dry run): %w", name, err)
		}
		return finished(fmt.Sprintf("would roll Helm release %s back from %s to revision %d", name, chartLabel(cur), h.Revision)), nil
	}
	if _, ok := rec.State["helmRevisionBefore"]; !ok {
		rec.State["helmRevisionBefore"] = strconv.Itoa(cur.Revision)
		if err := e.save(ctx, r); err != nil {
			return outcome{}, err
		}
	}
	before := atoi(rec.State["helmRevisionBefore"])
	err = e.helmAct(ctx, "helm rollback "+name, func(ctx context.Context) error {
		return hc.Rollback(ctx, req)
	}, func(ctx context.Context) bool {
		rel, err := hc.Get(ctx, h.Release, h.Namespace)
		return err == nil && rel.Revision > before && rel.Status == "deployed"
	})
	if err != nil {
		return outcome{}, err
	}
	return finished(fmt.Sprintf("rolled Helm release %s back from %s to revision %d", name, chartLabel(cur), h.Revision)), nil
}

// ---- objects ----

func objectFromPlan(m map[string]any) (*unstructured.Unstructured, error) {
	cp, err := jsonCopy(m)
	if err != nil {
		return nil, fmt.Errorf("object is not JSON data: %w", err)
	}
	u := &unstructured.Unstructured{Object: cp}
	if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
		return nil, fmt.Errorf("object %s has no apiVersion, kind or metadata.name; fix the plan", describeObj(u))
	}
	return u, nil
}

func describeObj(u *unstructured.Unstructured) string {
	return mesh.ObjectRef{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}.String()
}

func (e *Executor) applyObjects(ctx context.Context, r *run, objs []map[string]any) (outcome, error) {
	var changes []string
	for _, m := range objs {
		u, err := objectFromPlan(m)
		if err != nil {
			return outcome{}, err
		}
		opts := []client.ApplyOption{client.FieldOwner(e.opts.FieldOwner), client.ForceOwnership}
		verb := "applied"
		if r.dry {
			opts = append(opts, client.DryRunAll)
			verb = "would apply (server dry run passed)"
		}
		what := describeObj(u)
		attempt := 0
		err = e.retry(ctx, "apply "+what, func(ctx context.Context) error {
			if attempt++; attempt > 1 && !r.dry && e.applied(ctx, u) {
				return nil // the earlier attempt went through and only its response was lost
			}
			return e.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), opts...)
		})
		if err != nil {
			return outcome{}, fmt.Errorf("server-side apply %s (field owner %s): %w", what, e.opts.FieldOwner, err)
		}
		changes = append(changes, verb+" "+what)
	}
	return finished(changes...), nil
}

// applied reports whether the live object already holds every field of the desired one.
func (e *Executor) applied(ctx context.Context, desired *unstructured.Unstructured) bool {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(desired.GroupVersionKind())
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(desired), live); err != nil {
		return false
	}
	return contains(desired.Object, live.Object)
}

// contains reports whether have holds want: every key of a map, every element of a list (same
// length, element by element), equal scalars. Fields the server defaulted do not matter.
func contains(want, have any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !contains(v, h[k]) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !contains(w[i], h[i]) {
				return false
			}
		}
		return true
	case nil:
		return true
	}
	return fmt.Sprint(want) == fmt.Sprint(have)
}

func refObject(apiVersion string, ref mesh.ObjectRef) (*unstructured.Unstructured, error) {
	if apiVersion == "" {
		return nil, fmt.Errorf("%s has no apiVersion; fix the plan", ref)
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("%s: apiVersion %q: %w", ref, apiVersion, err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gv.WithKind(ref.Kind))
	u.SetNamespace(ref.Namespace)
	u.SetName(ref.Name)
	return u, nil
}

func (e *Executor) deleteObject(ctx context.Context, r *run, d *plan.DeleteObject) (outcome, error) {
	u, err := refObject(d.APIVersion, d.Object)
	if err != nil {
		return outcome{}, err
	}
	var opts []client.DeleteOption
	verb := "deleted"
	if r.dry {
		opts = append(opts, client.DryRunAll)
		verb = fmt.Sprintf("would delete (after checking the backup written by step %s)", d.BackupStep)
	} else if err := e.requireBackup(ctx, r, d.BackupStep, d.Object); err != nil {
		return outcome{}, err
	}
	gone := false
	err = e.retry(ctx, "delete "+d.Object.String(), func(ctx context.Context) error {
		err := e.c.Delete(ctx, u.DeepCopy(), opts...)
		if apierrors.IsNotFound(err) {
			gone = true
			return nil
		}
		return err
	})
	if err != nil {
		return outcome{}, fmt.Errorf("delete %s: %w", d.Object, err)
	}
	if gone {
		return finished(d.Object.String() + " is already gone"), nil
	}
	return finished(verb + " " + d.Object.String()), nil
}

func (e *Executor) patchLabels(ctx context.Context, r *run, pl *plan.PatchLabels) (outcome, error) {
	var change string
	err := e.retry(ctx, "patch labels of "+pl.Object.String(), func(ctx context.Context) error {
		u, err := refObject(pl.APIVersion, pl.Object)
		if err != nil {
			return err
		}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return err
		}
		have := u.GetLabels()
		patch := map[string]any{}
		var what []string
		for k, v := range pl.Set {
			if cur, ok := have[k]; !ok || cur != v {
				patch[k] = v
				what = append(what, k+"="+v)
			}
		}
		for _, k := range pl.Remove {
			if _, ok := have[k]; ok {
				patch[k] = nil
				what = append(what, k+"-")
			}
		}
		if len(patch) == 0 {
			change = "labels of " + pl.Object.String() + " are already as planned"
			return nil
		}
		sortStrings(what)
		body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": patch}})
		var opts []client.PatchOption
		change = "labelled " + pl.Object.String() + " " + strings.Join(what, " ")
		if r.dry {
			opts = append(opts, client.DryRunAll)
			change = "would label " + pl.Object.String() + " " + strings.Join(what, " ")
		}
		return e.c.Patch(ctx, u, client.RawPatch(types.MergePatchType, body), opts...)
	})
	if err != nil {
		return outcome{}, fmt.Errorf("patch labels of %s: %w", pl.Object, err)
	}
	return finished(change), nil
}

func (e *Executor) setUnschedulable(ctx context.Context, r *run, node string, want bool) (outcome, error) {
	verb := map[bool]string{true: "cordoned", false: "uncordoned"}[want]
	var change string
	err := e.retry(ctx, verb+" node "+node, func(ctx context.Context) error {
		var n corev1.Node
		if err := e.c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
			return err
		}
		if n.Spec.Unschedulable == want {
			change = fmt.Sprintf("node %s is already %s", node, verb)
			return nil
		}
		body, _ := json.Marshal(map[string]any{"spec": map[string]any{"unschedulable": want}})
		var opts []client.PatchOption
		change = verb + " node " + node
		if r.dry {
			opts = append(opts, client.DryRunAll)
			change = "would have " + change
		}
		return e.c.Patch(ctx, &n, client.RawPatch(types.MergePatchType, body), opts...)
	})
	if apierrors.IsNotFound(err) {
		return outcome{}, fmt.Errorf("node %s does not exist; re-plan from a fresh snapshot", node)
	}
	if err != nil {
		return outcome{}, fmt.Errorf("set node %s unschedulable=%v: %w", node, want, err)
	}
	return finished(change), nil
}

// deletePods deletes the selected pods. It records their UIDs first and deletes with a UID
// precondition, so a resumed step never deletes the replacement a controller created.
func (e *Executor) deletePods(ctx context.Context, r *run, rec *StepRecord, ps *plan.PodSelection) (outcome, error) {
	where := "namespace " + ps.Namespace
	if ps.Node != "" {
		where += " on node " + ps.Node
	}
	if len(ps.Selector) == 0 {
		return outcome{}, fmt.Errorf("deletePod in %s has no label selector; the executor does not delete every pod of a namespace: fix the plan", where)
	}
	if _, ok := rec.State["pods"]; !ok {
		var pods corev1.PodList
		opts := []client.ListOption{client.InNamespace(ps.Namespace), client.MatchingLabels(ps.Selector)}
		if ps.Node != "" {
			opts = append(opts, client.MatchingFields{"spec.nodeName": ps.Node})
		}
		if err := e.retry(ctx, "list pods "+where, func(ctx context.Context) error { return e.c.List(ctx, &pods, opts...) }); err != nil {
			return outcome{}, fmt.Errorf("list pods with labels %v in %s: %w", ps.Selector, where, err)
		}
		var targets []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				targets = append(targets, p.Name+"="+string(p.UID))
			}
		}
		sortStrings(targets)
		if r.dry {
			if len(targets) == 0 {
				return finished(fmt.Sprintf("no pod with labels %v runs in %s; nothing to delete", ps.Selector, where)), nil
			}
			return finished(fmt.Sprintf("would delete %s in %s: %s", plural(len(targets), "pod", "pods"), where, limitList(podNames(targets), 10))), nil
		}
		rec.State["pods"] = strings.Join(targets, ",")
		if err := e.save(ctx, r); err != nil {
			return outcome{}, err
		}
	}
	targets := strings.Split(rec.State["pods"], ",")
	if rec.State["pods"] == "" {
		return finished(fmt.Sprintf("no pod with labels %v ran in %s; nothing to delete", ps.Selector, where)), nil
	}
	var deleted []string
	for _, t := range targets {
		name, uid, _ := strings.Cut(t, "=")
		gone := false
		err := e.retry(ctx, "delete pod "+ps.Namespace+"/"+name, func(ctx context.Context) error {
			p := &corev1.Pod{}
			p.Namespace, p.Name = ps.Namespace, name
			u := types.UID(uid)
			err := e.c.Delete(ctx, p, client.Preconditions{UID: &u})
			switch {
			case apierrors.IsNotFound(err):
				gone = true
				return nil
			case apierrors.IsConflict(err):
				// Either a transient conflict or the UID precondition failed because a replacement
				// runs under the same name: look.
				var cur corev1.Pod
				gerr := e.c.Get(ctx, client.ObjectKeyFromObject(p), &cur)
				if apierrors.IsNotFound(gerr) || (gerr == nil && cur.UID != u) {
					gone = true
					return nil
				}
			}
			return err
		})
		if err != nil {
			return outcome{}, fmt.Errorf("delete pod %s/%s: %w", ps.Namespace, name, err)
		}
		if !gone {
			deleted = append(deleted, ps.Namespace+"/"+name)
		}
	}
	if len(deleted) == 0 {
		return finished(fmt.Sprintf("the selected pods in %s are already gone", where)), nil
	}
	return finished(fmt.Sprintf("deleted %s in %s: %s", plural(len(deleted), "pod", "pods"), where, limitList(deleted, 10))), nil
}

func podNames(targets []string) []string {
	out := make([]string, 0, len(targets))
	for _, t := range targets {
		n, _, _ := strings.Cut(t, "=")
		out = append(out, n)
	}
	return out
}

// ---- restart ----

// annotationRestartedAt is what kubectl rollout restart stamps on the pod template.
const annotationRestartedAt = "kubectl.kubernetes.io/restartedAt"

func workloadGVK(kind string) (schema.GroupVersionKind, error) {
	switch kind {
	case "Deployment", "StatefulSet", "DaemonSet":
		return schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: kind}, nil
	}
	return schema.GroupVersionKind{}, fmt.Errorf("cannot restart a %s; only Deployments, StatefulSets and DaemonSets roll out", kind)
}

func (e *Executor) restart(ctx context.Context, r *run, st *plan.Step, rec *StepRecord, rs *plan.Restart) (outcome, error) {
	size := max(1, rs.BatchSize)
	batches := (len(rs.Workloads) + size - 1) / size
	if r.dry {
		var names []string
		for _, w := range rs.Workloads {
			if _, err := workloadGVK(w.Kind); err != nil {
				return outcome{}, fmt.Errorf("%s: %w", w, err)
			}
			names = append(names, w.String())
		}
		return finished(fmt.Sprintf("would restart %s in %d batch(es) of %d: %s", plural(len(names), "workload", "workloads"), batches, size, limitList(names, 10))), nil
	}
	if rec.State["restartedAt"] == "" {
		rec.State["restartedAt"] = e.clock.Now().UTC().Format(time.RFC3339)
		if err := e.save(ctx, r); err != nil {
			return outcome{}, err
		}
	}
	stamp := rec.State["restartedAt"]
	var changes []string
	for b := atoi(rec.State["batch"]); b < batches; b = atoi(rec.State["batch"]) {
		ws := rs.Workloads[b*size : min(len(rs.Workloads), (b+1)*size)]
		key := fmt.Sprintf("batch%dPatched", b)
		if rec.State[key] != "true" {
			for _, w := range ws {
				changed, err := e.stampRestart(ctx, w, stamp)
				if err != nil {
					return outcome{}, err
				}
				if changed {
					changes = append(changes, fmt.Sprintf("restarted %s (restartedAt %s)", w, stamp))
				}
			}
			rec.State[key] = "true"
			if err := e.save(ctx, r); err != nil {
				return outcome{}, err
			}
		}
		var waiting []string
		for _, w := range ws {
			ok, reason, err := e.rolloutDone(ctx, w)
			if err != nil {
				return outcome{}, err
			}
			if !ok {
				waiting = append(waiting, reason)
			}
		}
		if len(waiting) > 0 {
			if e.clock.Now().Sub(rec.AttemptStarted) > e.opts.VerifyTimeout {
				return outcome{}, fmt.Errorf("%w: restart batch %d of %d did not roll out within %s: %s", ErrTimeout, b+1, batches, e.opts.VerifyTimeout, strings.Join(waiting, "; "))
			}
			rec.Changes = append(rec.Changes, changes...)
			return outcome{progress: fmt.Sprintf("batch %d/%d: waiting for %s", b+1, batches, strings.Join(waiting, "; ")), done: b, of: batches}, nil
		}
		rec.State["batch"] = strconv.Itoa(b + 1)
		if err := e.save(ctx, r); err != nil {
			return outcome{}, err
		}
	}
	return finished(changes...), nil
}

// stampRestart sets the restartedAt annotation of a workload's pod template to stamp, unless it is
// already there.
func (e *Executor) stampRestart(ctx context.Context, w mesh.ObjectRef, stamp string) (bool, error) {
	gvk, err := workloadGVK(w.Kind)
	if err != nil {
		return false, fmt.Errorf("%s: %w", w, err)
	}
	changed := false
	err = e.retry(ctx, "restart "+w.String(), func(ctx context.Context) error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: w.Name}, u); err != nil {
			return err
		}
		cur, _, _ := unstructured.NestedString(u.Object, "spec", "template", "metadata", "annotations", annotationRestartedAt)
		if cur == stamp {
			return nil
		}
		body, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
			"annotations": map[string]any{annotationRestartedAt: stamp}}}}})
		if err := e.c.Patch(ctx, u, client.RawPatch(types.MergePatchType, body)); err != nil {
			return err
		}
		changed = true
		return nil
	})
	if apierrors.IsNotFound(err) {
		return false, fmt.Errorf("%s does not exist; re-plan from a fresh snapshot", w)
	}
	if err != nil {
		return false, fmt.Errorf("restart %s: %w", w, err)
	}
	return changed, nil
}

// ---- waits, checks, gates ----

func (e *Executor) waitFor(ctx context.Context, r *run, st *plan.Step, rec *StepRecord, w *plan.WaitFor) (outcome, error) {
	if r.dry {
		return finished("would wait until " + w.Check.Description), nil
	}
	ok, reasons, err := e.checkAll(ctx, r, st, []plan.Check{w.Check})
	if err != nil {
		return outcome{}, err
	}
	if ok {
		return finished("holds: " + w.Check.Description), nil
	}
	timeout := e.opts.VerifyTimeout
	if w.TimeoutSeconds > 0 {
		timeout = time.Duration(w.TimeoutSeconds) * time.Second
	}
	if waited := e.clock.Now().Sub(rec.AttemptStarted); waited > timeout {
		return outcome{}, fmt.Errorf("%w: waited %s for %q: %s", ErrTimeout, timeout, w.Check.Description, strings.Join(reasons, "; "))
	}
	return outcome{progress: "waiting: " + strings.Join(reasons, "; ")}, nil
}

func (e *Executor) verify(ctx context.Context, r *run, st *plan.Step, v *plan.Verification) (outcome, error) {
	if r.dry {
		var what []string
		for _, c := range v.Checks {
			what = append(what, c.Description)
		}
		return finished("would verify: " + strings.Join(what, "; ")), nil
	}
	ok, reasons, err := e.checkAll(ctx, r, st, v.Checks)
	if err != nil {
		return outcome{}, err
	}
	if !ok {
		return outcome{}, fmt.Errorf("%w: %s", ErrVerification, strings.Join(reasons, "; "))
	}
	return finished(fmt.Sprintf("verified %s", plural(len(v.Checks), "check", "checks"))), nil
}

func (e *Executor) approval(ctx context.Context, r *run, st *plan.Step) (outcome, error) {
	if r.dry {
		return finished("would ask for approval: " + st.Approval.Message), nil
	}
	if e.opts.Approve == nil {
		e.emit(e.stepEvent(r, st, EventApprovalNeeded, st.Approval.Message))
		return outcome{}, fmt.Errorf("%w: %s; run Apply again with Options.Approve set to approve it (the journal resumes here)", ErrApprovalRequired, st.Approval.Message)
	}
	e.emit(e.stepEvent(r, st, EventApprovalNeeded, st.Approval.Message))
	ok, err := e.opts.Approve(ctx, *st)
	if err != nil {
		return outcome{}, fmt.Errorf("ask for approval: %w", err)
	}
	if !ok {
		return outcome{}, fmt.Errorf("%w: approval was refused: %s; run Apply again to ask again", ErrApprovalRequired, st.Approval.Message)
	}
	return finished("approved: " + st.Approval.Message), nil
}

func (e *Executor) healthGate(ctx context.Context, r *run, st *plan.Step, rec *StepRecord, g *plan.HealthGate) (outcome, error) {
	probe, ok := e.opts.Probes[g.Probe]
	if !ok {
		return outcome{}, fmt.Errorf("no probe named %q is registered; add it to Options.Probes (it answers for %q)", g.Probe, g.Scope)
	}
	if r.dry {
		return finished(fmt.Sprintf("would wait %ds, then ask probe %q about %s", g.SettleSeconds, g.Probe, g.Scope)), nil
	}
	base := rec.AttemptStarted
	for _, d := range st.DependsOn {
		if dr, ok := r.rec.Steps[d]; ok && dr.Finished.After(base) {
			base = dr.Finished
		}
	}
	if until := base.Add(time.Duration(g.SettleSeconds) * time.Second); e.clock.Now().Before(until) {
		left := until.Sub(e.clock.Now())
		return outcome{progress: fmt.Sprintf("settling %s before asking probe %q about %s", left.Round(time.Second), g.Probe, g.Scope), retryAfter: left}, nil
	}
	var healthy bool
	var reason string
	delay := e.opts.RetryBackoff
	for attempt := 1; ; attempt++ {
		var err error
		healthy, reason, err = probe(ctx, g.Scope)
		if err == nil {
			break
		}
		if ctx.Err() != nil || attempt >= e.opts.MaxAttempts {
			return outcome{}, fmt.Errorf("probe %q about %s failed (attempt %d): %w", g.Probe, g.Scope, attempt, err)
		}
		if err := sleep(ctx, e.clock, delay); err != nil {
			return outcome{}, err
		}
		delay = min(delay*2, maxRetryBackoff)
	}
	if healthy {
		return finished(fmt.Sprintf("probe %q says %s is healthy", g.Probe, g.Scope)), nil
	}
	prev := r.rollbackCandidate(st)
	offer := "no earlier step has a rollback; fix the cause and run Apply again to ask the probe again"
	ev := e.stepEvent(r, st, EventGateUnhealthy, fmt.Sprintf("probe %q says %s is unhealthy: %s", g.Probe, g.Scope, reason))
	if prev != nil {
		ev.Rollback = prev.ID
		offer = fmt.Sprintf("roll back step %q with Executor.Rollback (%s), or fix the cause and run Apply again to ask the probe again", prev.ID, prev.Rollback.Description)
	}
	e.emit(ev)
	return outcome{}, fmt.Errorf("%w: probe %q says %s is unhealthy: %s; %s", ErrUnhealthy, g.Probe, g.Scope, reason, offer)
}

// rollbackCandidate is the nearest step before st, following DependsOn, that is done and has a rollback.
func (r *run) rollbackCandidate(st *plan.Step) *plan.Step {
	seen := map[string]bool{}
	queue := append([]string(nil), st.DependsOn...)
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if seen[id] {
			continue
		}
		seen[id] = true
		s, ok := r.p.Step(id)
		if !ok {
			continue
		}
		if s.Rollback != nil && r.rec.status(id) == StatusDone {
			return s
		}
		queue = append(queue, s.DependsOn...)
	}
	return nil
}
