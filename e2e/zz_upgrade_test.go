//go:build e2e

package e2e

// This file is named to sort last: go test runs a package's tests in file order, and TestUpgrade
// changes the installation every other suite observes (1.30.3 → 1.31.4), so it must run after them.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/e2e/internal/charts"
	"github.com/ambientkit/ambientkit/e2e/internal/cluster"
	"github.com/ambientkit/ambientkit/e2e/internal/fakeistiod"
	"github.com/ambientkit/ambientkit/e2e/internal/harness"
	"github.com/ambientkit/ambientkit/e2e/internal/kube"
	"github.com/ambientkit/ambientkit/e2e/internal/upgrade"
	"github.com/ambientkit/ambientkit/revision"
)

// A process started with upgrade.EnvChild set is an apply process of TestUpgrade (the test binary
// re-executed): it applies the plan and exits before TestMain would build a cluster.
func init() {
	if os.Getenv(upgrade.EnvChild) != "" {
		upgrade.RunChild()
	}
}

// The upgrade the feature carries out.
const (
	upgradeVersion  = "1.31.4"
	upgradeRevision = "1-31-4"
	// upgradeBatch is the node-by-node batch size.
	upgradeBatch = 4
	// upgradeLease is the Lease duration of the apply processes: short, so the resumed process gets the
	// Lease of the killed one soon after it expires.
	upgradeLease = 8 * time.Second
	// killAtDrain: the first apply process is killed while the drain of this ambient node (1-based,
	// in plan order) is in progress.
	killAtDrain = 2
)

// upgradeSettle is how long health gates settle before the probe is asked. The planner says 30–60 s
// per gate, time for traffic metrics to move; the probe here reads readiness, which a few seconds
// show, so the feature shortens them (E2E_UPGRADE_SETTLE: a duration, or "planned" to keep them).
func upgradeSettle(t *testing.T) (time.Duration, bool) {
	v := os.Getenv("E2E_UPGRADE_SETTLE")
	switch v {
	case "":
		return 3 * time.Second, true
	case "planned":
		return 0, false
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		t.Fatalf("E2E_UPGRADE_SETTLE=%q: want a duration or \"planned\"", v)
	}
	return d, true
}

// upgradeRun is what the feature shares between its steps.
type upgradeRun struct {
	watcher  *upgrade.Watcher
	plan     *plan.Plan
	planFile string
	hash     string
	chartDir string
	// runs are the apply processes, in order.
	runs []*applyProcess
	// rbac is the ServiceAccount the apply processes run as, bound to exactly the plan's derived rules.
	rbac *leastPrivilege
	// killedStep is the drain step that was in progress when the first process was killed.
	killedStep string
	// repeated counts the steps the killed run finished, unrecorded, that the resumed run finished again.
	repeated int
	// churned is the node the churn drained and removed during the run.
	churned string
	// ztunnelStrategy is the ztunnel DaemonSet's update strategy before the upgrade, which node by
	// node must leave exactly as it was.
	ztunnelStrategy mesh.UpdateStrategy
	t0              time.Time
	timings         []string
}

func (u *upgradeRun) timing(name string, since time.Time) {
	u.timings = append(u.timings, fmt.Sprintf("%s=%s", name, time.Since(since).Round(100*time.Millisecond)))
}

type upgradeKey struct{}

func upgradeState(ctx context.Context, t *testing.T) *upgradeRun {
	u, ok := ctx.Value(upgradeKey{}).(*upgradeRun)
	if !ok {
		t.Fatal("the upgrade setup did not run")
	}
	return u
}

// failCannotRun fails a suite where it cannot run: a suite must never be green because
// the upgrade did not run (run it on a cluster where it can: kwok with the fake istiod in service mode).
func failCannotRun(t *testing.T, why string) {
	t.Helper()
	t.Fatalf("%s: the upgrade cannot run here, and a test that did not run proves nothing", why)
}

// TestUpgrade upgrades the installed 1.30.3 mesh to 1.31.4 through the public API only: observe.Live,
// ambient.PlanUpgrade (revisioned, ztunnel node by node in batches), execute.New with the Helm SDK
// adapter, applied by a child process that is SIGKILLed in the middle of a node's drain and resumed by
// a fresh process from the journal once the Lease expired. A watcher checks from every pod and
// PodDisruptionBudget event that no ambient node ever lacks a ready ztunnel and no budget is violated.
func TestUpgrade(t *testing.T) {
	switch {
	case !h.Cluster.Owned() && os.Getenv("E2E_UPGRADE_EXISTING") != "1":
		// Node-by-node drains evict every pod of the nodes running the fixtures' ambient pods, the
		// cluster owner's too.
		failCannotRun(t, "TestUpgrade drains nodes; on an existing cluster it runs only with E2E_UPGRADE_EXISTING=1")
	case h.Fake != nil && h.Fake.Mode() == fakeistiod.ModeURL:
		// Tag moves server-side apply webhooks naming a service, which the API server rejects while the
		// fake has rewritten them to a url (see TestWebhookPath).
		failCannotRun(t, "TestUpgrade needs the fake istiod in service mode (it moves tags with server-side apply); it runs in url mode here (run as a user who may bind port 443)")
	}
	target := mesh.MustParseVersion(upgradeVersion)
	next := charts.Istio{Namespace: harness.IstioNamespace, Revision: upgradeRevision, Version: upgradeVersion, Hub: harness.IstioHub,
		GatewayNamespace: harness.GatewayNamespace, GatewayRelease: harness.GatewayRelease}
	live := func(ctx context.Context) (*mesh.Snapshot, error) {
		return observe.Live(ctx, h.Client, observe.Options{ServerVersion: h.Clientset.Discovery()})
	}
	options := func(chartPaths map[string]string) ambient.UpgradeOptions {
		return ambient.UpgradeOptions{
			Target:  target,
			Ztunnel: ambient.ZtunnelNodeByNode{BatchSize: upgradeBatch},
			Charts:  ambient.ChartSource{Paths: chartPaths},
			// The images of release 1.31.4, set as the installation set 1.30.3's (charts.Istio).
			Values: map[string]map[string]any{
				"istiod":  {"global": map[string]any{"hub": next.Hub, "tag": next.Version}},
				"cni":     next.CNIValues(),
				"ztunnel": {"hub": next.Hub, "tag": next.Version, "global": map[string]any{"hub": next.Hub, "tag": next.Version}},
				"gateway": next.GatewayValues(),
			},
			Today: time.Now(),
		}
	}

	f := features.New("revisioned upgrade 1.30.3 → 1.31.4, killed and resumed").
		WithLabel("feature", "upgrade").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			u := &upgradeRun{t0: time.Now()}
			ctx = context.WithValue(ctx, upgradeKey{}, u)
			w, err := upgrade.StartWatcher(ctx, h.Clientset, harness.IstioNamespace)
			if err != nil {
				t.Fatal(err)
			}
			u.watcher = w

			createAccount(ctx, t) // the ServiceAccount the plan runs as; its namespace is in the snapshot
			// The charts of release 1.31.4: the same sources, stamped as Istio's release build does.
			u.chartDir = filepath.Join(h.Cluster.RunDir(), "charts-"+upgradeVersion)
			paths, err := h.Helm.StampCharts(u.chartDir, upgradeVersion)
			if err != nil {
				t.Fatal(err)
			}

			// The first plan shows what keeps 1-30-3 alive besides what the plan moves: a namespace
			// pinned to it by name and a policy labelled with it. The planner leaves those to their owner.
			t1 := time.Now()
			snap, err := live(ctx)
			if err != nil {
				t.Fatal(err)
			}
			p, err := ambient.PlanUpgrade(snap, options(paths))
			if err != nil {
				t.Fatalf("PlanUpgrade: %v", err)
			}
			logFindings(t, p)
			rm, ok := p.Step("istiod/" + harness.Revision + "/remove")
			if !ok {
				t.Fatalf("the plan has no step removing revision %s", harness.Revision)
			}
			for _, want := range []string{"Namespace payments", "AuthorizationPolicy analytics/reports-l4"} {
				if !strings.Contains(rm.Blocked, want) {
					t.Errorf("removal of %s: blocked %q, want it to name %s", harness.Revision, rm.Blocked, want)
				}
			}

			// What the owner does about them: the namespace follows a tag (the plan moves tags and
			// restarts what follows them), the policy drops the label so every revision processes it.
			if err := ownerMovesOffRevision(ctx); err != nil {
				t.Fatal(err)
			}
			if snap, err = live(ctx); err != nil {
				t.Fatal(err)
			}
			if p, err = ambient.PlanUpgrade(snap, options(paths)); err != nil {
				t.Fatalf("PlanUpgrade after the owner's changes: %v", err)
			}
			logFindings(t, p)
			if !p.Runnable() {
				for _, s := range p.Steps {
					if s.Blocked != "" {
						t.Errorf("step %s is blocked: %s", s.ID, s.Blocked)
					}
				}
				t.Fatalf("the plan is not runnable: stopping findings %v", plan.Stopping(p.Findings))
			}
			u.timing("plan", t1)
			if settle, shorten := upgradeSettle(t); shorten {
				for i := range p.Steps {
					if g := p.Steps[i].HealthGate; g != nil {
						g.SettleSeconds = int64(settle / time.Second)
					}
				}
			}
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
			u.save(t, p, "upgrade.plan.yaml")
			if len(snap.Ztunnels) != 1 {
				t.Fatalf("%d ztunnel DaemonSets before the upgrade, want 1", len(snap.Ztunnels))
			}
			u.ztunnelStrategy = snap.Ztunnels[0].UpdateStrategy
			// The chart's own strategy (surge one, none unavailable), the one a null would lose.
			if want := (mesh.UpdateStrategy{Type: "RollingUpdate", MaxSurge: "1", MaxUnavailable: "0"}); u.ztunnelStrategy != want {
				t.Fatalf("ztunnel runs update strategy %+v before the upgrade, want the chart's %+v", u.ztunnelStrategy, want)
			}
			// The apply processes run as a ServiceAccount bound to exactly what the plan derives.
			u.rbac = grantDerivedRBAC(ctx, t, p, snap)
			chartObjectsAreGranted(t, u.rbac, p)
			cannotEscalate(ctx, t, u.rbac)
			return ctx
		}).
		Assess("without any one derived rule the preflight names what it granted and nothing changes", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			u := upgradeState(ctx, t)
			t1 := time.Now()
			everyRuleIsNeeded(ctx, t, u.rbac, u.plan)
			u.timing("rbac-minimal", t1)
			return ctx
		}).
		Assess("the plan is applied by a process killed mid-drain and resumed by another", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			u := upgradeState(ctx, t)
			t1 := time.Now()
			first := startApply(t, u, 1, false)
			// Node churn, as Karpenter or an autoscaler makes it during a long run: when the first
			// drain starts, a node the plan has not reached yet is drained and removed, and a new node
			// joins the general pool. Neither may stop the run or make the plan stale.
			churn := newNodeChurn(u.plan)
			first.killWhen = func(l upgrade.Line, inProgress map[string]bool, drainsStarted int) bool {
				if l.Type == string(execute.EventStepStarted) && l.Kind == string(plan.KindDrain) {
					churn.start(ctx)
				}
				return l.Type == string(execute.EventStepProgress) && l.Kind == string(plan.KindDrain) && inProgress[l.StepID] &&
					drainsStarted >= killAtDrain && l.Of > 0
			}
			err := first.wait()
			if cerr := churn.wait(); cerr != nil {
				t.Fatalf("node churn: %v", cerr)
			}
			t.Logf("node churn during the run: %s removed, %s added", churn.gone, churn.added)
			u.churned = churn.gone
			u.timing("apply-until-kill", t1)
			first.requireKilled(t, err)
			u.killedStep = first.killedBy.StepID
			t.Logf("SIGKILL after %q (%s: %s), %d steps finished", first.killedBy.Type, first.killedBy.StepID, first.killedBy.Message, first.finished())

			// The journal says where the killed run stood; the Lease still names it (nobody released it).
			rec, err := (&execute.ConfigMapJournal{Client: h.Client, Namespace: harness.IstioNamespace}).Load(ctx, u.hash)
			if err != nil || rec == nil {
				t.Fatalf("journal of the killed run: %v (record %v)", err, rec != nil)
			}
			if st := rec.Steps[u.killedStep]; st == nil || st.Status != execute.StatusInProgress {
				t.Errorf("journal: step %s is %+v, want in progress (the run was killed mid-drain)", u.killedStep, st)
			}
			done := 0
			recorded := map[string]bool{} // done in the journal: never run again
			for _, s := range u.plan.Steps {
				if st := rec.Steps[s.ID]; st != nil && st.Status == execute.StatusDone {
					done++
					recorded[s.ID] = true
				}
			}
			t.Logf("journal after the kill: %d of %d steps done, %s in progress", done, len(u.plan.Steps), u.killedStep)
			var lease coordinationv1.Lease
			if err := h.Client.Get(ctx, client.ObjectKey{Namespace: harness.IstioNamespace, Name: execute.LockName}, &lease); err != nil {
				t.Fatal(err)
			}
			if holder := ptr.Deref(lease.Spec.HolderIdentity, ""); holder != first.identity {
				t.Errorf("Lease %s held by %q after the kill, want %q", execute.LockName, holder, first.identity)
			}

			// A fresh process with another identity: locked out until the Lease expires, then it resumes.
			t2 := time.Now()
			second := startApply(t, u, 2, true)
			if err := second.wait(); err != nil {
				t.Fatalf("the resumed apply failed: %v; its last lines:\n%s", err, second.tail(20))
			}
			u.timing("apply-resumed", t2)
			exit, ok := second.last(upgrade.LineExit)
			if !ok || exit.Err != "" || !exit.Resumed {
				t.Errorf("resumed run exit line %+v, want resumed and no error", exit)
			}
			var expires time.Time
			if rt := lease.Spec.RenewTime; rt != nil {
				expires = rt.Add(time.Duration(ptr.Deref(lease.Spec.LeaseDurationSeconds, 0)) * time.Second)
			}
			if n := second.count(upgrade.LineLocked); n == 0 {
				// The run took the Lease without waiting: right only if it took it after the killed
				// run's Lease had expired (a loaded machine can start the process that late).
				took, ok := second.first(string(execute.EventRunStarted), string(execute.EventRunResumed))
				switch {
				case !ok:
					t.Errorf("the second process was never locked out and never said it started")
				case took.Time.Before(expires):
					t.Errorf("the second process took the Lease at %s, before the killed run's Lease (%s) expired at %s, without being locked out",
						took.Time.Format(time.RFC3339Nano), upgradeLease, expires.Format(time.RFC3339Nano))
				default:
					t.Logf("the second process started after the killed run's Lease had expired (%s ≥ %s): no lockout to see",
						took.Time.Format(time.RFC3339Nano), expires.Format(time.RFC3339Nano))
				}
			} else {
				t.Logf("the second process waited on the killed run's Lease for %s (%d attempts)", second.lockedFor(), n)
			}
			if _, ok := second.last(string(execute.EventRunResumed)); !ok {
				t.Error("the second process did not resume from the journal")
			}
			// Nothing the journal of the first process had done ran again; the killed drain finished in
			// the second. Steps the first finished whose completion the journal did not hold yet (a
			// cordon, a wait: steps a repeat finds done) may finish again, changing nothing.
			doneFirst := first.stepsWith(string(execute.EventStepFinished))
			repeated := 0
			for id := range doneFirst {
				if !second.stepsWith(string(execute.EventStepStarted))[id] {
					continue
				}
				if recorded[id] {
					t.Errorf("step %s, done in the journal, ran again after the resume", id)
				}
				repeated++
			}
			t.Logf("%d steps the killed run finished but had not recorded yet finished again in the resumed run", repeated)
			u.repeated = repeated
			if !second.stepsWith(string(execute.EventStepFinished))[u.killedStep] {
				t.Errorf("the killed step %s did not finish in the resumed run", u.killedStep)
			}
			if n := first.count(string(execute.EventNodeGone)) + second.count(string(execute.EventNodeGone)); n != 1 {
				t.Errorf("%d NodeGone events, want one for %s", n, churn.gone)
			}
			if len(recorded)+len(second.stepsWith(string(execute.EventStepFinished))) != len(u.plan.Steps) {
				t.Errorf("%d steps done in the killed run's journal and %d finished in the second run; the plan has %d",
					len(recorded), len(second.stepsWith(string(execute.EventStepFinished))), len(u.plan.Steps))
			}
			if rec, err = (&execute.ConfigMapJournal{Client: h.Client, Namespace: harness.IstioNamespace}).Load(ctx, u.hash); err != nil {
				t.Fatal(err)
			}
			for _, s := range u.plan.Steps {
				if st := rec.Steps[s.ID]; st == nil || st.Status != execute.StatusDone {
					t.Errorf("journal: step %s is %+v, want done", s.ID, st)
				}
			}
			if err := h.Client.Get(ctx, client.ObjectKey{Namespace: harness.IstioNamespace, Name: execute.LockName}, &lease); err != nil {
				t.Fatal(err)
			}
			if holder := ptr.Deref(lease.Spec.HolderIdentity, ""); holder != "" {
				t.Errorf("Lease %s still held by %q after the run finished", execute.LockName, holder)
			}
			reportRequests(t, u)
			return ctx
		}).
		Assess("kubectl get events shows the run on its journal", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			u := upgradeState(ctx, t)
			checkRunEvents(ctx, t, u.hash, len(u.plan.Steps), u.repeated, u.killedStep, u.runs[0].identity)
			return ctx
		}).
		Assess("no ambient node was ever without a ready ztunnel and no PodDisruptionBudget was violated", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			u := upgradeState(ctx, t)
			r := u.watcher.Report()
			t.Logf("watcher: %s", r.Summary())
			for _, g := range r.Gaps {
				t.Errorf("ztunnel gap: %s, during step %s", g, u.stepAt(g.Start))
			}
			for _, v := range r.PDBViolations {
				t.Errorf("PDB violated: %s", v)
			}
			nodes := 0
			for _, ns := range h.Nodes {
				nodes += len(ns)
			}
			// Sanity: the watcher saw the node-by-node replacement (every node's ztunnel went once).
			if r.ZtunnelPodsDeleted < nodes || r.ZtunnelPodsCreated < nodes {
				t.Errorf("the watcher saw %d ztunnel pods deleted and %d created, want at least %d each", r.ZtunnelPodsDeleted, r.ZtunnelPodsCreated, nodes)
			}
			if len(r.AmbientNodes) == 0 || len(r.PDBsHealthyAtStart) == 0 {
				t.Errorf("the watcher checked %d ambient nodes and %d budgets; it should have seen some of each", len(r.AmbientNodes), len(r.PDBsHealthyAtStart))
			}
			// The fixtures' pods vanish at once here, so few drains overlap (TestBlueGreenZtunnel's
			// fleet honours its grace periods and asserts the batch drains together): never more than
			// the batch, the node churn's own drain apart.
			if most, at := r.MostDraining(map[string]bool{u.churned: true}); most > upgradeBatch {
				t.Errorf("%d nodes drained at the same time, more than the batch of %d: %v", most, upgradeBatch, at)
			}
			return ctx
		}).
		Assess("the mesh runs 1.31.4 everywhere and nothing refers to 1-30-3", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			s, err := live(ctx)
			if err != nil {
				t.Fatal(err)
			}
			checkUpgraded(t, s, target, upgradeState(ctx, t).ztunnelStrategy)
			// Not asserted, reported: what the drains did to the long-running Job (restartPolicy Never,
			// backoffLimit 0), whose pods the planner says eviction "restarts from the beginning".
			if j, err := h.Clientset.BatchV1().Jobs("analytics").Get(ctx, "reindex", metav1.GetOptions{}); err == nil {
				t.Logf("Job analytics/reindex after the upgrade: active %d, ready %d, failed %d, succeeded %d, conditions %v",
					j.Status.Active, ptr.Deref(j.Status.Ready, 0), j.Status.Failed, j.Status.Succeeded, jobConditions(j.Status.Conditions))
			}
			return ctx
		})
	if h.Fake != nil { // with E2E_FAKE_ISTIOD=off the real istiod serves the webhooks: nothing of ours to check
		f = f.Assess("no webhook call failed and none left the loopback", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			checkWebhookCalls(ctx, t, upgradeRevision)
			return ctx
		})
	}
	f = f.Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		u, ok := ctx.Value(upgradeKey{}).(*upgradeRun)
		if !ok {
			return ctx
		}
		for _, p := range u.runs {
			p.stop()
		}
		if u.watcher != nil {
			u.watcher.Stop()
		}
		u.timing("total", u.t0)
		h.Logf("upgrade: timings %s", strings.Join(u.timings, " "))
		if !h.Cluster.Owned() {
			// The harness removes the releases it installed; the new revision is this feature's.
			if err := h.Helm.Uninstall(ctx, "istiod-"+upgradeRevision, harness.IstioNamespace); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
		return ctx
	})
	testenv.Test(t, f.Feature())
}

// save keeps the plan the apply processes apply: its hash, and the file in the run folder.
func (u *upgradeRun) save(t *testing.T, p *plan.Plan, name string) {
	t.Helper()
	var err error
	u.plan = p
	if u.hash, err = execute.PlanHash(p); err != nil {
		t.Fatal(err)
	}
	b, err := plan.EncodeYAML(p)
	if err != nil {
		t.Fatal(err)
	}
	u.planFile = filepath.Join(h.Cluster.RunDir(), name)
	if err := os.WriteFile(u.planFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	kinds := map[plan.Kind]int{}
	for _, s := range p.Steps {
		kinds[s.Kind()]++
	}
	t.Logf("plan %q: %d steps %v, saved to %s (%d bytes)", p.Metadata.Name, len(p.Steps), kinds, u.planFile, len(b))
}

// stepAt names the step the apply processes had last started at a time.
func (u *upgradeRun) stepAt(at time.Time) string {
	last := "(none)"
	for _, p := range u.runs {
		for _, l := range p.snapshot() {
			if l.Type == string(execute.EventStepStarted) && !l.Time.After(at) {
				last = l.StepID
			}
		}
	}
	return last
}

func jobConditions(cs []batchv1.JobCondition) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s=%s (%s)", c.Type, c.Status, c.Reason))
	}
	return out
}

func logFindings(t *testing.T, p *plan.Plan) {
	t.Helper()
	for _, f := range p.Findings {
		if f.Severity != plan.Info {
			t.Logf("finding: %s", f)
		}
	}
}

// ownerMovesOffRevision does what the plan's RevisionStillReferenced findings ask of the mesh owner:
// namespace payments follows tag prod-stable instead of revision 1-30-3 by name, and
// AuthorizationPolicy analytics/reports-l4 drops its istio.io/rev label.
func ownerMovesOffRevision(ctx context.Context) error {
	ns := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, mesh.LabelRev, harness.TagProdStable))
	if _, err := h.Clientset.CoreV1().Namespaces().Patch(ctx, "payments", types.MergePatchType, ns, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label namespace payments: %w", err)
	}
	ap := &unstructured.Unstructured{}
	ap.SetAPIVersion("security.istio.io/v1")
	ap.SetKind("AuthorizationPolicy")
	ap.SetNamespace("analytics")
	ap.SetName("reports-l4")
	body := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, mesh.LabelRev))
	if err := h.Client.Patch(ctx, ap, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("unlabel AuthorizationPolicy analytics/reports-l4: %w", err)
	}
	return nil
}

// applyProcess is one apply child process and the lines it wrote.
type applyProcess struct {
	n        int
	identity string
	cmd      *exec.Cmd
	// killWhen, set before the first line arrives, decides from each line whether to SIGKILL the process.
	killWhen func(l upgrade.Line, inProgress map[string]bool, drainsStarted int) bool

	mu       sync.Mutex
	lines    []upgrade.Line
	killedBy *upgrade.Line
	done     chan error
}

// requireKilled fails the test unless the process ended by the SIGKILL its killWhen sent; err is
// what wait returned.
func (a *applyProcess) requireKilled(t *testing.T, err error) {
	t.Helper()
	if a.killedBy == nil {
		t.Fatalf("the first apply process ended before it was killed (%v); its last lines:\n%s", err, a.tail(15))
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the first apply process ended with %v, want killed by SIGKILL", err)
	}
}

// startApply runs the test binary again as an apply process (see init).
func startApply(t *testing.T, u *upgradeRun, n int, resume bool) *applyProcess {
	t.Helper()
	cfg := upgrade.Config{
		Kubeconfig: u.rbac.kubeconfig, PlanFile: u.planFile, Resume: resume,
		Identity: fmt.Sprintf("e2e-apply-%d", n), LeaseDuration: upgradeLease,
		PollInterval: 500 * time.Millisecond, VerifyTimeout: 3 * time.Minute,
		HelmDir: filepath.Join(h.Cluster.RunDir(), "helm-apply"), QPS: 50, Burst: 100,
	}
	if resume {
		cfg.WaitLocked = 4 * upgradeLease
	}
	b, _ := json.Marshal(cfg)
	logPath := filepath.Join(h.Cluster.RunDir(), fmt.Sprintf("upgrade-apply-%d.log", n))
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), upgrade.EnvChild+"="+string(b))
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &applyProcess{n: n, identity: cfg.Identity, cmd: cmd, done: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	u.runs = append(u.runs, p)
	h.Logf("upgrade: apply process %d (pid %d, identity %s, resume=%v) started; log %s", n, cmd.Process.Pid, cfg.Identity, resume, logPath)
	go func() {
		inProgress := map[string]bool{}
		drains := 0
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var l upgrade.Line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				h.Logf("upgrade: apply %d: unreadable line %q", n, sc.Text())
				continue
			}
			switch l.Type {
			case string(execute.EventStepStarted):
				inProgress[l.StepID] = true
				if l.Kind == string(plan.KindDrain) {
					drains++
				}
			case string(execute.EventStepFinished), string(execute.EventStepFailed):
				delete(inProgress, l.StepID)
			}
			p.mu.Lock()
			p.lines = append(p.lines, l)
			kill := p.killedBy == nil && p.killWhen != nil && p.killWhen(l, inProgress, drains)
			if kill {
				p.killedBy = &l
			}
			p.mu.Unlock()
			if kill {
				_ = cmd.Process.Kill() // SIGKILL: no deferred release, no last journal write
				h.Logf("upgrade: apply %d: SIGKILL during %s (%s)", n, l.StepID, l.Message)
			}
			logLine(n, l)
		}
		err := cmd.Wait()
		logf.Close()
		p.done <- err
	}()
	return p
}

// logLine prints the lines worth reading in the run's log: not every node's step.
func logLine(n int, l upgrade.Line) {
	switch execute.EventType(l.Type) {
	case execute.EventStepProgress, execute.EventStepSkipped, execute.EventRetry:
		return
	case execute.EventStepStarted, execute.EventStepFinished:
		if strings.Contains(l.StepID, "/node/") {
			return
		}
	}
	msg := l.Message
	if l.Err != "" {
		msg += " error: " + l.Err
	}
	if len(msg) > 240 {
		msg = msg[:240] + "…"
	}
	h.Logf("upgrade: apply %d: [%d/%d] %s %s %s", n, l.Index, l.Total, l.Type, l.StepID, msg)
}

func (p *applyProcess) wait() error {
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(15 * time.Minute):
		p.stop()
		return errors.New("apply process did not finish within 15 minutes")
	}
}

// stop kills the process unless it has ended.
func (p *applyProcess) stop() {
	select {
	case err := <-p.done:
		p.done <- err
	default:
		_ = p.cmd.Process.Kill()
	}
}

func (p *applyProcess) snapshot() []upgrade.Line {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]upgrade.Line(nil), p.lines...)
}

func (p *applyProcess) tail(n int) string {
	ls := p.snapshot()
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	var out []string
	for _, l := range ls {
		out = append(out, fmt.Sprintf("  %s %s %s %s", l.Type, l.StepID, l.Message, l.Err))
	}
	return strings.Join(out, "\n")
}

// first returns the process's first line of any of the types.
func (p *applyProcess) first(types ...string) (upgrade.Line, bool) {
	for _, l := range p.snapshot() {
		if slices.Contains(types, l.Type) {
			return l, true
		}
	}
	return upgrade.Line{}, false
}

func (p *applyProcess) last(typ string) (upgrade.Line, bool) {
	ls := p.snapshot()
	for i := len(ls) - 1; i >= 0; i-- {
		if ls[i].Type == typ {
			return ls[i], true
		}
	}
	return upgrade.Line{}, false
}

func (p *applyProcess) count(typ string) int {
	n := 0
	for _, l := range p.snapshot() {
		if l.Type == typ {
			n++
		}
	}
	return n
}

func (p *applyProcess) lockedFor() time.Duration {
	var first, last time.Time
	for _, l := range p.snapshot() {
		if l.Type == upgrade.LineLocked {
			if first.IsZero() {
				first = l.Time
			}
			last = l.Time
		}
	}
	return last.Sub(first)
}

func (p *applyProcess) stepsWith(typ string) map[string]bool {
	out := map[string]bool{}
	for _, l := range p.snapshot() {
		if l.Type == typ {
			out[l.StepID] = true
		}
	}
	return out
}

func (p *applyProcess) finished() int { return len(p.stepsWith(string(execute.EventStepFinished))) }

// reportRequests logs the API requests of the node-by-node steps, per node, from the apply processes'
// per-step counts.
func reportRequests(t *testing.T, u *upgradeRun) {
	t.Helper()
	type nodeCount struct {
		steps    int
		requests int64
		byKey    map[string]int64
		evicted  bool
	}
	nodes := map[string]*nodeCount{}
	var gates int64
	gateN := 0
	total := map[string]int64{}
	for _, p := range u.runs {
		for _, l := range p.snapshot() {
			if l.Type != string(execute.EventStepFinished) {
				continue
			}
			var sum int64
			for k, v := range l.StepRequests {
				sum += v
				total[k] += v
			}
			if i := strings.Index(l.StepID, "ztunnel/node/"); i >= 0 {
				rest := l.StepID[i+len("ztunnel/node/"):]
				node := rest[:strings.Index(rest, "/")]
				nc := nodes[node]
				if nc == nil {
					nc = &nodeCount{byKey: map[string]int64{}}
					nodes[node] = nc
				}
				nc.steps++
				nc.requests += sum
				if l.StepRequests["CREATE pods/eviction"] > 0 {
					nc.evicted = true
				}
				for k, v := range l.StepRequests {
					nc.byKey[k] += v
				}
			}
			if strings.Contains(l.StepID, "ztunnel/batch/") {
				gates += sum
				gateN++
			}
		}
	}
	var names []string
	for n := range nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	var evicted, plain []int64
	for _, n := range names {
		nc := nodes[n]
		if n == nodeOf(u.killedStep) {
			continue // split over two processes; its first part is not counted
		}
		if nc.evicted {
			evicted = append(evicted, nc.requests)
		} else {
			plain = append(plain, nc.requests)
		}
	}
	t.Logf("API requests per node of the node-by-node step, inside its steps (the killed node %s left out): nodes with pods evicted %s; nodes without %s; %d batch health gates took %d requests in all",
		nodeOf(u.killedStep), stats(evicted), stats(plain), gateN, gates)
	for _, n := range names {
		nc := nodes[n]
		var parts []string
		for _, k := range upgrade.SortedKeys(nc.byKey) {
			parts = append(parts, fmt.Sprintf("%s=%d", k, nc.byKey[k]))
		}
		t.Logf("  node %s: %d steps, %d requests: %s", n, nc.steps, nc.requests, strings.Join(parts, " "))
	}
	var parts []string
	for _, k := range upgrade.SortedKeys(total) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, total[k]))
	}
	t.Logf("API requests inside steps, whole plan: %s", strings.Join(parts, " "))
}

func nodeOf(stepID string) string {
	i := strings.Index(stepID, "ztunnel/node/")
	if i < 0 {
		return ""
	}
	rest := stepID[i+len("ztunnel/node/"):]
	if j := strings.Index(rest, "/"); j >= 0 {
		return rest[:j]
	}
	return rest
}

func stats(v []int64) string {
	if len(v) == 0 {
		return "none"
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	var sum int64
	for _, x := range v {
		sum += x
	}
	return fmt.Sprintf("%d nodes, min %d, median %d, max %d, mean %s", len(v), v[0], v[len(v)/2], v[len(v)-1],
		strconv.FormatFloat(float64(sum)/float64(len(v)), 'f', 1, 64))
}

// checkUpgraded asserts the end state of the upgrade on a fresh snapshot.
func checkUpgraded(t *testing.T, s *mesh.Snapshot, target mesh.Version, ztunnelStrategy mesh.UpdateStrategy) {
	t.Helper()
	type rev struct {
		Name    string
		Version mesh.Version
		Ready   bool
	}
	var revs []rev
	for _, r := range s.Revisions {
		revs = append(revs, rev{r.Name, r.Version, r.Ready()})
	}
	if d := cmp.Diff([]rev{{upgradeRevision, target, true}}, revs); d != "" {
		t.Errorf("istiod revisions (-want +got):\n%s", d)
	}
	if s.DefaultRevision != upgradeRevision {
		t.Errorf("default revision %q, want %q", s.DefaultRevision, upgradeRevision)
	}
	for _, tag := range s.Tags {
		if tag.Revision != upgradeRevision {
			t.Errorf("tag %s points at %q, want %q", tag.Name, tag.Revision, upgradeRevision)
		}
	}
	if len(s.Tags) != 2 {
		t.Errorf("tags %v, want default and %s", s.TagNames(), harness.TagProdStable)
	}
	for _, inj := range s.Injectors {
		if inj.Revision != upgradeRevision {
			t.Errorf("injector %s serves revision %q, want %q", inj.Name, inj.Revision, upgradeRevision)
		}
	}

	nodes := 0
	for _, ns := range h.Nodes {
		nodes += len(ns)
	}
	agents := func(what string, v mesh.Version, pods []mesh.NodePod) {
		if v != target {
			t.Errorf("%s runs %s, want %s", what, v, target)
		}
		seen := map[string]bool{}
		for _, p := range pods {
			if p.Version != target || !p.Ready || p.Terminating {
				t.Errorf("%s pod %s on %s: version %s, ready %v, terminating %v", what, p.Pod, p.Node, p.Version, p.Ready, p.Terminating)
			}
			seen[p.Node] = true
		}
		if len(seen) != nodes {
			t.Errorf("%s runs on %d nodes, want all %d", what, len(seen), nodes)
		}
	}
	if s.CNI == nil {
		t.Error("no istio-cni")
	} else {
		agents("istio-cni", s.CNI.Version, s.CNI.Pods)
	}
	if len(s.Ztunnels) != 1 {
		t.Fatalf("%d ztunnel DaemonSets, want 1", len(s.Ztunnels))
	}
	z := s.Ztunnels[0]
	agents("ztunnel", z.Version, z.Pods)
	if z.Revision != upgradeRevision {
		t.Errorf("ztunnel is pinned to revision %q, want %q", z.Revision, upgradeRevision)
	}
	if d := cmp.Diff(ztunnelStrategy, z.UpdateStrategy); d != "" {
		t.Errorf("ztunnel update strategy after node by node is not the one it ran with before (-before +after):\n%s", d)
	}

	sidecars := 0
	for _, w := range s.Workloads {
		if len(w.SidecarRevisions) == 0 {
			continue
		}
		sidecars++
		if d := cmp.Diff(map[string]int{upgradeRevision: w.Pods}, w.SidecarRevisions); d != "" {
			t.Errorf("%s: injected revisions (-want +got):\n%s", w.Ref(), d)
		}
		if d := cmp.Diff([]mesh.Version{target}, w.ProxyVersions); d != "" {
			t.Errorf("%s: proxy versions (-want +got):\n%s", w.Ref(), d)
		}
	}
	if sidecars < 4 { // shop/web, payments/api, payments/ledger, istio-ingress
		t.Errorf("%d sidecar workloads found, want at least 4", sidecars)
	}
	gateway := false
	for _, g := range s.Gateways {
		if g.Revision != upgradeRevision {
			t.Errorf("%s is owned by %q, want %q", g.Ref(), g.Revision, upgradeRevision)
		}
		if g.Kind == mesh.GatewayKindDeployment && g.Namespace == harness.GatewayNamespace {
			gateway = true
			if d := cmp.Diff([]mesh.Version{target}, g.Versions); d != "" || g.ReadyPods != g.Pods || g.Pods == 0 {
				t.Errorf("gateway %s: %d/%d pods ready, proxy versions (-want +got):\n%s", g.Ref(), g.ReadyPods, g.Pods, d)
			}
		}
	}
	if !gateway {
		t.Errorf("gateway %s/%s not found", harness.GatewayNamespace, harness.GatewayRelease)
	}

	type rel struct{ Name, Chart, ChartVersion, AppVersion, Status string }
	var rels []rel
	for _, r := range s.HelmReleases {
		rels = append(rels, rel{r.Name, r.Chart, r.ChartVersion, r.AppVersion, r.Status})
	}
	sort.Slice(rels, func(i, j int) bool { return rels[i].Name < rels[j].Name })
	v := target.String()
	want := []rel{
		{charts.ReleaseBase, "base", v, v, "deployed"},
		{charts.ReleaseCNI, "cni", v, v, "deployed"},
		{harness.GatewayRelease, "gateway", v, v, "deployed"},
		{"istiod-" + upgradeRevision, "istiod", v, v, "deployed"},
		{charts.ReleaseZtunnel, "ztunnel", v, v, "deployed"},
	}
	sort.Slice(want, func(i, j int) bool { return want[i].Name < want[j].Name })
	if d := cmp.Diff(want, rels); d != "" {
		t.Errorf("Helm releases (-want +got):\n%s", d)
	}
	if refs := revision.References(s, harness.Revision); len(refs) > 0 {
		t.Errorf("revision %s is still referred to: %v", harness.Revision, refs)
	}
	for _, n := range s.Nodes {
		if n.Unschedulable {
			t.Errorf("node %s is still cordoned", n.Name)
		}
	}
}

// checkWebhookCalls asserts what TestWebhookPath's last assessment asserts, after the upgrade: every
// webhook targets a loopback address the fake serves with its CA, no call failed or left the loopback,
// the API server failed no call; and injection calls were served for the new revision.
func checkWebhookCalls(ctx context.Context, t *testing.T, rev string) {
	t.Helper()
	problems, err := h.Fake.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("webhook configuration: %s", p)
	}
	byRev := map[string]int{}
	for _, c := range h.Fake.Calls() {
		if c.Kind == "inject" {
			byRev[c.Revision]++
		}
	}
	if byRev[rev] == 0 {
		t.Errorf("no injection call served for revision %s (by revision: %v)", rev, byRev)
	}
	for _, c := range h.Fake.Failures() {
		t.Errorf("failed webhook call: %+v", c)
	}
	for _, c := range h.Fake.NonLoopback() {
		t.Errorf("webhook call off the loopback: %+v", c)
	}
	m, err := apiserverMetrics(ctx)
	if err != nil {
		t.Fatalf("API server metrics: %v", err)
	}
	if n := m.sum("apiserver_admission_webhook_rejection_count", `error_type="calling_webhook_error"`); n != 0 {
		t.Errorf("the API server failed to call a webhook %v times", n)
	}
	if n := m.sum("apiserver_admission_webhook_fail_open_count", ""); n != 0 {
		t.Errorf("the API server ignored %v failed webhook calls (failurePolicy Ignore)", n)
	}
	t.Logf("injection calls by revision: %v; fake istiod listens on %v", byRev, h.Fake.Addresses())
}

// nodeChurn removes one node the plan drains last and adds a new one, once, in the background.
type nodeChurn struct {
	gone, added string
	once        sync.Once
	done        chan error
}

func newNodeChurn(p *plan.Plan) *nodeChurn {
	c := &nodeChurn{added: "general-99", done: make(chan error, 1)}
	for _, st := range p.Steps {
		if st.Drain != nil {
			c.gone = st.Drain.Node
		}
	}
	return c
}

func (c *nodeChurn) start(ctx context.Context) {
	c.once.Do(func() { go func() { c.done <- c.run(ctx) }() })
}

func (c *nodeChurn) wait() error {
	select {
	case err := <-c.done:
		return err
	default:
		return fmt.Errorf("the churn never started (no drain began)")
	}
}

// run drains and deletes c.gone as Karpenter consolidation does (cordon, evict, delete), and adds
// c.added cordoned until its node agents are ready, then schedulable.
func (c *nodeChurn) run(ctx context.Context) error {
	cs := h.Clientset
	if err := kube.Cordon(ctx, cs, c.gone, true); err != nil {
		return err
	}
	if err := kube.EvictAll(ctx, cs, c.gone, 3*time.Minute); err != nil {
		return err
	}
	if err := cs.CoreV1().Nodes().Delete(ctx, c.gone, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete node %s: %w", c.gone, err)
	}
	// What the pod garbage collector does with the pods of a deleted node, without its 40s quarantine.
	if err := kube.DeletePodsOn(ctx, cs, c.gone); err != nil {
		return err
	}
	info, err := cs.Discovery().ServerVersion()
	if err != nil {
		return err
	}
	n := cluster.FakeNode("general", 99, 200, info.GitVersion)
	n.Spec.Unschedulable = true
	if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("add node %s: %w", c.added, err)
	}
	for _, ds := range []string{"istio-cni-node", "ztunnel"} {
		if err := kube.WaitDaemonSetPodOn(ctx, cs, harness.IstioNamespace, ds, c.added, 3*time.Minute); err != nil {
			return err
		}
	}
	if err := kube.Cordon(ctx, cs, c.added, false); err != nil {
		return err
	}
	for pool, names := range h.Nodes {
		var keep []string
		for _, name := range names {
			if name != c.gone {
				keep = append(keep, name)
			}
		}
		if pool == "general" {
			keep = append(keep, c.added)
		}
		h.Nodes[pool] = keep
	}
	return nil
}
