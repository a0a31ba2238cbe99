package execute

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var deletePodAction = action{
	phase: "replacing",
	run: func(e *engine, ctx context.Context, r *run, st *plan.Step, rec *StepRecord) (outcome, error) {
		return e.deletePods(ctx, r, st, rec, st.DeletePod)
	},
	counts:  "pods replaced",
	journal: deletePodJournal,
	backup:  usesNoBackup,
}

// deletePodJournal is the journal policy of pod deletions: their UIDs are in the journal before they
// delete, so a repeat deletes no replacement, whatever acted since. The deletion writes the journal
// itself, when it records the UIDs.
var deletePodJournal = &journalPolicy{later: true, acrossAll: true, recordsItself: true}

// deletePods deletes the selected pods. It records their UIDs first and deletes with a UID
// precondition, so a resumed step never deletes the replacement a controller created.
func (e *engine) deletePods(ctx context.Context, r *run, st *plan.Step, rec *StepRecord, ps *plan.PodSelection) (outcome, error) {
	where := "namespace " + ps.Namespace
	if ps.Node != "" {
		where += " on node " + ps.Node
	}
	if len(ps.Selector) == 0 {
		return outcome{}, fmt.Errorf("deletePod in %s has no label selector; the executor does not delete every pod of a namespace: fix the plan", where)
	}
	recorded := false // the journal was written in this call
	if _, ok := rec.State["pods"]; !ok {
		pods, ok := e.podsFromDrain(r, ps)
		if !ok {
			var list corev1.PodList
			opts := []client.ListOption{client.InNamespace(ps.Namespace), client.MatchingLabels(ps.Selector)}
			if ps.Node != "" {
				opts = append(opts, client.MatchingFields{"spec.nodeName": ps.Node})
			}
			if err := e.retry(ctx, "list pods "+where, func(ctx context.Context) error { return e.c.List(ctx, &list, opts...) }); err != nil {
				return outcome{}, fmt.Errorf("list pods with labels %v in %s: %w", ps.Selector, where, err)
			}
			pods = list.Items
		}
		var targets []string
		for _, p := range pods {
			if p.DeletionTimestamp == nil {
				targets = append(targets, p.Name+"="+string(p.UID))
			}
		}
		sortStrings(targets)
		if r.dry {
			if len(targets) == 0 {
				return finished(fmt.Sprintf("no pod with labels %v runs in %s; nothing to delete", ps.Selector, where)), nil
			}
			out := finished(fmt.Sprintf("would delete %s in %s: %s", plural(len(targets), "pod", "pods"), where, plan.ListSome(podNames(targets), 10)))
			for _, n := range podNames(targets) {
				out.touched = append(out.touched, mesh.ObjectRef{Kind: "Pod", Namespace: ps.Namespace, Name: n})
			}
			return out, nil
		}
		rec.State["pods"] = strings.Join(targets, ",")
		if err := e.save(ctx, r); err != nil {
			return outcome{}, err
		}
		recorded = true
	}
	targets := strings.Split(rec.State["pods"], ",")
	if rec.State["pods"] == "" {
		return finished(fmt.Sprintf("no pod with labels %v ran in %s; nothing to delete", ps.Selector, where)), nil
	}
	if !recorded {
		if err := e.recordBefore(ctx, r, st); err != nil {
			return outcome{}, err
		}
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
	out := finished(fmt.Sprintf("deleted %s in %s: %s", plural(len(deleted), "pod", "pods"), where, plan.ListSome(deleted, 10)))
	for _, d := range deleted {
		ns, n, _ := strings.Cut(d, "/")
		out.touched = append(out.touched, mesh.ObjectRef{Kind: "Pod", Namespace: ns, Name: n})
	}
	return out, nil
}

// drainViewAge bounds how old the drain's LIST may be for a pod deletion to take its pods from it.
const drainViewAge = 2 * time.Second

// podsFromDrain returns the selected pods from the LIST that the drain of the same node made in the
// previous unit (its last pass, the one that found the node drained), when that LIST is at most
// drainViewAge old: a node's ztunnel pod is deleted right after its drain, and the drain listed every
// pod on the node moments before. Deleting from that LIST is as safe as from a new one: the UIDs are
// recorded in the journal before any deletion, and every deletion carries its UID as a precondition,
// so a pod replaced since (by its controller or anyone) is never deleted, only found gone; a pod
// created since is the DaemonSet's at its current template, which is what the step wants running.
// A retry, a resumed run, a Step call or anything else between the drain and the deletion lists.
func (e *engine) podsFromDrain(r *run, ps *plan.PodSelection) ([]corev1.Pod, bool) {
	v := r.lastPods
	r.lastPods = podsView{}
	if r.dry || ps.Node == "" || v.node != ps.Node {
		return nil, false
	}
	if age := e.clock.Now().Sub(v.at); age < 0 || age > drainViewAge {
		return nil, false
	}
	sel := labels.SelectorFromSet(ps.Selector)
	var out []corev1.Pod
	for _, p := range v.pods {
		if p.Namespace == ps.Namespace && p.Spec.NodeName == ps.Node && sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out, true
}

func podNames(targets []string) []string {
	out := make([]string, 0, len(targets))
	for _, t := range targets {
		n, _, _ := strings.Cut(t, "=")
		out = append(out, n)
	}
	return out
}
