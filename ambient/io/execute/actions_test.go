package execute_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// stepsPlan wraps steps into a valid plan for the world; each step depends on the one before.
func stepsPlan(t *testing.T, w *world, steps ...plan.Step) *plan.Plan {
	t.Helper()
	if w.Model == nil {
		w.Model = &mesh.Snapshot{}
	}
	p := plan.New(plan.Metadata{Name: "test", Operation: "test", Fingerprint: w.Model.Fingerprint()})
	for i, st := range steps {
		if st.Risk == "" {
			st.Risk = plan.RiskLow
		}
		if i > 0 && st.DependsOn == nil {
			st.DependsOn = []string{steps[i-1].ID}
		}
		p.Steps = append(p.Steps, st)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

func rel(name, chartName, version string, revision int, values map[string]any) execute.Release {
	return execute.Release{Name: name, Namespace: "istio-system", Chart: chartName, ChartVersion: version, Revision: revision, Status: "deployed", Values: values}
}

func backupStep(objs ...plan.BackupObject) plan.Step {
	return plan.Step{ID: "backup", Description: "back up", Backup: &plan.Backup{Objects: objs},
		Postconditions: []plan.Check{{Type: plan.CheckBackupReadable, Description: "reads back"}}}
}

var (
	istiodBackup = plan.BackupObject{HelmRelease: "istiod-1-30-3", Object: mesh.ObjectRef{Kind: "HelmRelease", Namespace: "istio-system", Name: "istiod-1-30-3"}}
	cmBackup     = plan.BackupObject{APIVersion: "v1", Object: mesh.ObjectRef{Kind: "ConfigMap", Namespace: "legacy", Name: "old-config"}}
	oldConfig    = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "old-config", Namespace: "legacy", Labels: map[string]string{"a": "b"}}, Data: map[string]string{"k": "v"}}
)

func TestEveryActionActsOnceAndReRunningItIsANoOp(t *testing.T) {
	t.Parallel() // a world of its own: the heavy tests share the package's wall time
	upgrade := plan.Step{ID: "upgrade", Description: "upgrade cni", HelmUpgrade: &plan.HelmRelease{Release: "istio-cni", Namespace: "istio-system",
		Chart: chart("cni", toV), Values: map[string]any{"profile": "ambient"}, PreviousRevision: 1}}
	install := plan.Step{ID: "install", Description: "install istiod", HelmInstall: &plan.HelmRelease{Release: "istiod-1-31-4", Namespace: "istio-system",
		Chart: chart("istiod", toV), Values: map[string]any{"revision": toRev}},
		Rollback: &plan.Step{ID: "install/undo", Description: "uninstall", Risk: plan.RiskLow, HelmUninstall: &plan.HelmUninstall{Release: "istiod-1-31-4", Namespace: "istio-system"}}}
	drainN1 := plan.Step{ID: "drain", Description: "drain n1", Drain: &plan.NodeDrain{Node: "n1", TimeoutSeconds: 600, IgnoreDaemonSets: true, DeleteEmptyDirData: true}}
	cases := []struct {
		name    string
		objs    []client.Object
		rels    []execute.Release
		steps   []plan.Step
		setup   func(*world)
		effects map[string]int
		err     error
		says    string
		after   func(*testing.T, *world, *plan.Plan)
		// rerun is what applying the plan again returns (nil: a no-op success).
		rerun error
	}{
		{name: "a Helm upgrade moves the release once",
			rels: []execute.Release{rel("istio-cni", "cni", fromV, 1, map[string]any{"profile": "ambient"})}, steps: []plan.Step{upgrade},
			effects: map[string]int{"helm upgrade istio-system/istio-cni": 1}},
		{name: "a Helm upgrade of a release already at the chart and values is skipped",
			rels: []execute.Release{rel("istio-cni", "cni", toV, 2, map[string]any{"profile": "ambient", "unset": nil})}, steps: []plan.Step{upgrade},
			effects: map[string]int{}},
		{name: "a Helm upgrade of a missing release is an error that says to install it", steps: []plan.Step{upgrade},
			says: "does not exist; the plan upgrades it: install it first or re-plan"},
		{name: "a Helm install of a release someone else installed is refused",
			rels: []execute.Release{rel("istiod-1-31-4", "istiod", "1.31.3", 1, nil)}, steps: []plan.Step{install},
			says: "already exists (chart istiod-1.31.3 #1, deployed); the plan installs it fresh: re-plan"},
		{name: "a Helm install installs once", steps: []plan.Step{install}, effects: map[string]int{"helm install istio-system/istiod-1-31-4": 1}},
		{name: "a Helm rollback returns to the revision once",
			rels:    []execute.Release{rel("ztunnel", "ztunnel", toV, 2, nil)},
			steps:   []plan.Step{{ID: "rollback", Description: "roll back", HelmRollback: &plan.HelmRollback{Release: "ztunnel", Namespace: "istio-system", Revision: 2}}},
			effects: map[string]int{}, after: func(t *testing.T, w *world, _ *plan.Plan) {
				if r, _ := w.Helm.Get(context.Background(), "ztunnel", "istio-system"); r.Revision != 2 {
					t.Errorf("a rollback to the current revision made revision %d", r.Revision)
				}
			}},
		{name: "a Helm uninstall removes the release after its backup reads back",
			rels:    []execute.Release{rel("istiod-1-30-3", "istiod", fromV, 1, map[string]any{"revision": fromRev})},
			steps:   []plan.Step{backupStep(istiodBackup), {ID: "remove", Description: "remove", HelmUninstall: &plan.HelmUninstall{Release: "istiod-1-30-3", Namespace: "istio-system", BackupStep: "backup"}}},
			effects: map[string]int{"helm uninstall istio-system/istiod-1-30-3": 1}},
		{name: "a Helm uninstall whose backup was tampered with is refused",
			rels:  []execute.Release{rel("istiod-1-30-3", "istiod", fromV, 1, nil)},
			steps: []plan.Step{backupStep(istiodBackup), {ID: "remove", Description: "remove", HelmUninstall: &plan.HelmUninstall{Release: "istiod-1-30-3", Namespace: "istio-system", BackupStep: "backup"}}},
			setup: func(w *world) { w.TamperBackups() },
			err:   execute.ErrNoBackup, says: "reads back different from what was written"},
		{name: "an object is server-side applied once with the field owner",
			steps: []plan.Step{{ID: "apply", Description: "apply", ApplyObject: &plan.ApplyObject{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "mesh", "namespace": "istio-system"}, "data": map[string]any{"a": "1"}}}}},
			effects: map[string]int{"apply ConfigMap istio-system/mesh": 1},
			after: func(t *testing.T, w *world, _ *plan.Plan) {
				var cm corev1.ConfigMap
				if err := w.Base.Get(context.Background(), client.ObjectKey{Namespace: "istio-system", Name: "mesh"}, &cm); err != nil || cm.Data["a"] != "1" {
					t.Errorf("applied ConfigMap: %v %v", cm.Data, err)
				}
			}},
		{name: "an object is deleted once after its backup, and the backup holds it",
			objs:    []client.Object{oldConfig},
			steps:   []plan.Step{backupStep(cmBackup), {ID: "delete", Description: "delete", DeleteObject: &plan.DeleteObject{APIVersion: "v1", Object: cmBackup.Object, BackupStep: "backup"}}},
			effects: map[string]int{"delete ConfigMap legacy/old-config": 1},
			after: func(t *testing.T, w *world, _ *plan.Plan) {
				var secrets corev1.SecretList
				_ = w.Base.List(context.Background(), &secrets, client.InNamespace("istio-system"))
				if len(secrets.Items) != 1 || !strings.Contains(string(secrets.Items[0].Data["backup.json"]), `"old-config"`) {
					t.Errorf("backup Secrets: %v", secrets.Items)
				}
			}},
		{name: "labels are set and removed with one merge patch",
			objs: []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"istio-injection": "enabled"}}}},
			steps: []plan.Step{{ID: "label", Description: "label", PatchLabels: &plan.PatchLabels{APIVersion: "v1", Object: mesh.ObjectRef{Kind: "Namespace", Name: "shop"},
				Set: map[string]string{mesh.LabelDataplaneMode: "ambient"}, Remove: []string{"istio-injection", "absent"}}}},
			effects: map[string]int{`patch Namespace shop {"metadata":{"labels":{"istio-injection":null,"istio.io/dataplane-mode":"ambient"}}}`: 1}},
		{name: "labels already as planned need no patch",
			objs: []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{mesh.LabelDataplaneMode: "ambient"}}}},
			steps: []plan.Step{{ID: "label", Description: "label", PatchLabels: &plan.PatchLabels{APIVersion: "v1", Object: mesh.ObjectRef{Kind: "Namespace", Name: "shop"},
				Set: map[string]string{mesh.LabelDataplaneMode: "ambient"}}}},
			effects: map[string]int{}},
		{name: "cordon and uncordon patch spec.unschedulable, and skip a node already there",
			objs: []client.Object{node("n1"), func() *corev1.Node { n := node("n2"); n.Spec.Unschedulable = true; return n }()},
			steps: []plan.Step{{ID: "c1", Description: "cordon", Cordon: &plan.NodeRef{Node: "n1"}}, {ID: "c2", Description: "cordon", Cordon: &plan.NodeRef{Node: "n2"}},
				{ID: "u1", Description: "uncordon", Uncordon: &plan.NodeRef{Node: "n1"}}},
			effects: map[string]int{`patch Node n1 {"spec":{"unschedulable":true}}`: 1, `patch Node n1 {"spec":{"unschedulable":false}}`: 1}},
		{name: "a drain evicts workload pods and leaves DaemonSet, mirror and finished pods",
			objs: append(append([]client.Object{node("n1")}, nodeAgents(fromV, []string{"n1"}, true)...),
				workloadPod("shop", "cart-0", "n1", nil), workloadPod("shop", "cart-1", "n2", nil),
				podWith(workloadPod("kube-system", "etcd-n1", "n1", nil), func(p *corev1.Pod) { p.Annotations = map[string]string{"kubernetes.io/config.mirror": "x"} }),
				podWith(workloadPod("batch", "done", "n1", nil), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })),
			steps:   []plan.Step{drainN1},
			effects: map[string]int{"evict shop/cart-0": 1}},
		{name: "a drain refuses a pod with emptyDir data unless the plan allows losing it",
			objs: []client.Object{node("n1"), podWith(workloadPod("shop", "cache-0", "n1", nil), func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			})},
			steps: []plan.Step{{ID: "drain", Description: "drain", Drain: &plan.NodeDrain{Node: "n1", IgnoreDaemonSets: true}}},
			says:  "pod shop/cache-0 on node n1 mounts an emptyDir volume and the plan does not allow losing its data"},
		{name: "a drain held by a budget that never allows an eviction stops well before its timeout, naming the budget",
			objs: []client.Object{node("n1"), workloadPod("shop", "db-0", "n1", map[string]string{"app": "db"}), workloadPod("shop", "cart-0", "n1", nil),
				&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"},
					Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
					Status: policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 1}}},
			steps: []plan.Step{drainN1},
			err:   execute.ErrDrainStuck,
			says:  "drain of node n1: PodDisruptionBudget shop/db allows no eviction with all 1 of its pods ready (minAvailable 1)"},
		{name: "a drain held by a budget that waits for a pod to turn ready times out, naming the budget and what still runs",
			objs: []client.Object{node("n1"), node("n2"), workloadPod("shop", "db-0", "n1", map[string]string{"app": "db"}), workloadPod("shop", "cart-0", "n1", nil),
				podWith(workloadPod("shop", "db-1", "n2", map[string]string{"app": "db"}), func(p *corev1.Pod) { p.Status.Conditions = nil }),
				&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"},
					Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
					Status: policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 1}}},
			steps: []plan.Step{drainN1},
			err:   execute.ErrTimeout,
			says:  "drain of node n1 did not finish within 10m0s; 1 pod still run: shop/db-0; held by PodDisruptionBudget shop/db (does not allow evicting pods currently)"},
		{name: "a drain held by a budget whose replacement pod the scheduler places nowhere stops well before its timeout, naming the pod",
			objs: []client.Object{node("n1"), workloadPod("shop", "db-0", "n1", map[string]string{"app": "db"}), workloadPod("shop", "cart-0", "n1", nil),
				podWith(workloadPod("shop", "db-1", "", map[string]string{"app": "db"}), func(p *corev1.Pod) {
					p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
						Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.NewTime(t0), Message: "0/1 nodes are available: 1 node(s) were unschedulable."}}}
				}),
				&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"},
					Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}},
			steps: []plan.Step{drainN1},
			err:   execute.ErrDrainStuck,
			says:  "waits on PodDisruptionBudget shop/db, which waits for pod shop/db-1 (Pending 2m"},
		{name: "pods are deleted once by selector on their node",
			objs:    append([]client.Object{node("n1"), node("n2")}, nodeAgents(fromV, []string{"n1", "n2"}, true)...),
			steps:   []plan.Step{{ID: "replace", Description: "replace", DeletePod: &plan.PodSelection{Namespace: "istio-system", Selector: map[string]string{"app": "ztunnel"}, Node: "n2"}}},
			effects: map[string]int{"delete Pod istio-system/ztunnel-n2": 1}},
		{name: "a restart stamps restartedAt batch by batch",
			objs: []client.Object{deployment("legacy", "a", 1, map[string]string{"app": "a"}, "a:1"), deployment("legacy", "b", 1, map[string]string{"app": "b"}, "b:1")},
			steps: []plan.Step{{ID: "restart", Description: "restart", Restart: &plan.Restart{BatchSize: 1,
				Workloads: []mesh.ObjectRef{{Kind: "Deployment", Namespace: "legacy", Name: "a"}, {Kind: "Deployment", Namespace: "legacy", Name: "b"}}}}},
			effects: map[string]int{
				`patch Deployment legacy/a {"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"<clock>"}}}}}`: 1,
				`patch Deployment legacy/b {"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"<clock>"}}}}}`: 1}},
		{name: "a wait that never holds times out with the last reason", objs: []client.Object{node("n1")},
			steps: []plan.Step{{ID: "wait", Description: "wait", WaitFor: &plan.WaitFor{TimeoutSeconds: 300, Check: plan.Check{Type: plan.CheckNodeAgentReady,
				Object: ztRef, Params: map[string]string{"node": "n1", "version": toV}, Description: "ztunnel ready on n1"}}}},
			err: execute.ErrTimeout, says: `waited 5m0s for "ztunnel ready on n1": NodeAgentReady: no pod of DaemonSet istio-system/ztunnel runs on node n1`},
		{name: "a health gate with no registered probe names the probe to register",
			steps: []plan.Step{{ID: "gate", Description: "gate", HealthGate: &plan.HealthGate{Probe: "error-rate", Scope: "tag prod"}}},
			says:  `no probe named "error-rate" is registered; add it to Options.Probes`},
		{name: "a precondition that does not hold stops the step before it acts", objs: []client.Object{node("n1")},
			steps: []plan.Step{{ID: "c", Description: "cordon", Cordon: &plan.NodeRef{Node: "n1"},
				Preconditions: []plan.Check{{Type: plan.CheckDeploymentReady, Object: depRef, Description: "istiod ready"}}}},
			err: execute.ErrPrecondition, says: "Deployment istio-system/istiod-1-31-4 does not exist"},
		{name: "a rollback that removes what the plan installed backs it up first",
			steps: []plan.Step{install}, effects: map[string]int{"helm install istio-system/istiod-1-31-4": 1, "helm uninstall istio-system/istiod-1-31-4": 1},
			rerun: execute.ErrRolledBack,
			after: func(t *testing.T, w *world, p *plan.Plan) {
				e := w.Executor()
				if _, err := e.Rollback(context.Background(), p, "install"); err != nil {
					t.Fatalf("Rollback: %v", err)
				}
				var secrets corev1.SecretList
				_ = w.Base.List(context.Background(), &secrets, client.InNamespace("istio-system"))
				if len(secrets.Items) != 1 || !strings.Contains(string(secrets.Items[0].Data["backup.json"]), `"chartVersion":"1.31.4"`) {
					t.Errorf("no backup of the release before the uninstall: %v", secrets.Items)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.objs...)
			w.Helm = w.NewHelm(tc.rels...)
			if tc.setup != nil {
				tc.setup(w)
			}
			p := stepsPlan(t, w, tc.steps...)
			_, err := w.Executor().Apply(context.Background(), p, execute.ApplyOptions{})
			if tc.says != "" || tc.err != nil {
				if err == nil || (tc.err != nil && !errors.Is(err, tc.err)) || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("Apply: %v; want %v saying %q", err, tc.err, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if tc.after != nil {
				tc.after(t, w, p)
			}
			if d := cmp.Diff(tc.effects, w.Effects()); d != "" {
				t.Errorf("side effects (-want +got):\n%s", d)
			}
			before := w.Effects()
			if _, err := w.Executor().Apply(context.Background(), p, execute.ApplyOptions{}); !errors.Is(err, tc.rerun) {
				t.Fatalf("second Apply: %v, want %v", err, tc.rerun)
			}
			if d := cmp.Diff(before, w.Effects()); d != "" {
				t.Errorf("re-running the finished plan acted again:\n%s", d)
			}
		})
	}
}

func TestStepRunsOneBoundedUnitAndReportsProgress(t *testing.T) {
	w := newWorld(t, node("n1"), workloadPod("shop", "db-0", "n1", map[string]string{"app": "db"}), workloadPod("shop", "cart-0", "n1", nil),
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"},
			Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}})
	w.RefuseEvictions("shop/db-0", 1)
	p := stepsPlan(t, w, plan.Step{ID: "drain", Description: "drain n1", Drain: &plan.NodeDrain{Node: "n1", IgnoreDaemonSets: true}})
	var waited [][]string
	e := w.Executor(func(o *execute.Options) {
		o.Observer = func(ev execute.Event) {
			if ev.Type == execute.EventWaitingOnPDB {
				waited = append(waited, append(ev.PDBs, ev.Pods...))
			}
		}
	})
	type unit struct {
		Status   execute.StepStatus
		Done, Of int
	}
	var units []unit
	for i := 0; i < 5; i++ {
		sr, err := e.Step(context.Background(), p, "drain")
		if err != nil {
			t.Fatal(err)
		}
		units = append(units, unit{sr.Status, sr.Done, sr.Of})
		if sr.Status == execute.StatusDone {
			break
		}
	}
	want := []unit{{execute.StatusInProgress, 1, 2}, {execute.StatusInProgress, 2, 2}, {execute.StatusDone, 0, 0}}
	if d := cmp.Diff(want, units); d != "" {
		t.Errorf("units (-want +got):\n%s", d)
	}
	if d := cmp.Diff([][]string{{"shop/db", "shop/db-0"}}, waited); d != "" {
		t.Errorf("WaitingOnPDB events name the budget and the pod (-want +got):\n%s", d)
	}
	sr, err := e.Step(context.Background(), p, "drain")
	if err != nil || !sr.Skipped {
		t.Errorf("Step on a done step: %+v, %v; want a skipped no-op", sr, err)
	}
}

func TestAResumedDeletionNeverDeletesTheReplacement(t *testing.T) {
	objs := append([]client.Object{node("n1")}, nodeAgents(toV, []string{"n1"}, true)...)
	w := newWorld(t, objs...)
	st := plan.Step{ID: "replace", Description: "replace", DeletePod: &plan.PodSelection{Namespace: "istio-system", Selector: map[string]string{"app": "ztunnel"}, Node: "n1"}}
	p := stepsPlan(t, w, st)
	hash, _ := execute.PlanHash(p)
	// An earlier run recorded that it would delete pod ztunnel-n1 with an older UID, then died after
	// the deletion: the pod of that name now is the replacement.
	j := &execute.MemoryJournal{}
	_ = j.Save(context.Background(), &execute.Record{PlanHash: hash, Steps: map[string]*execute.StepRecord{
		"replace": {Status: execute.StatusInProgress, Phase: "act", State: map[string]string{"pods": "ztunnel-n1=uid-of-the-old-pod"}}}})
	res, err := w.Executor(func(o *execute.Options) { o.Journal = j }).Apply(context.Background(), p, execute.ApplyOptions{Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if eff := w.Effects(); len(eff) != 0 {
		t.Errorf("the replacement was deleted: %v", eff)
	}
	if msg := res.Steps[0].Message; !strings.Contains(msg, "already gone") {
		t.Errorf("message %q", msg)
	}
}

var _ = appsv1.SchemeGroupVersion

func TestStepCallsContinueOneAttemptSoAWaitStillTimesOut(t *testing.T) {
	w := newWorld(t, node("n1"))
	p := stepsPlan(t, w, plan.Step{ID: "wait", Description: "wait", WaitFor: &plan.WaitFor{TimeoutSeconds: 120, Check: plan.Check{
		Type: plan.CheckNodeAgentReady, Object: ztRef, Params: map[string]string{"node": "n1"}, Description: "ztunnel on n1"}}})
	rec := &recorder{}
	e := w.Executor(func(o *execute.Options) { o.Observer = rec.observe })
	var err error
	calls := 0
	for ; calls < 10 && err == nil; calls++ {
		var sr execute.StepResult
		sr, err = e.Step(context.Background(), p, "wait")
		if err == nil && sr.Status != execute.StatusInProgress {
			t.Fatalf("unit %d: %+v", calls, sr)
		}
		w.Clock.Advance(time.Minute)
	}
	if !errors.Is(err, execute.ErrTimeout) || calls != 4 {
		t.Errorf("after %d Step calls a minute apart: %v; want ErrTimeout on the 4th", calls, err)
	}
	if n := len(rec.of(execute.EventStepStarted)); n != 1 {
		t.Errorf("%d StepStarted events for one attempt", n)
	}
}
