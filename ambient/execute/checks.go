package execute

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
	"github.com/ambientkit/ambientkit/revision"
)

// listPageSize pages the cluster-wide LISTs of checks.
const listPageSize = 500

func labelsSet(m map[string]string) labels.Set { return labels.Set(m) }

// checkPass evaluates a list of checks; snapshot-based checks share one observation.
type checkPass struct {
	e    *Executor
	r    *run
	st   *plan.Step
	snap *mesh.Snapshot
}

func (cp *checkPass) snapshot(ctx context.Context) (*mesh.Snapshot, error) {
	if cp.snap == nil {
		s, err := cp.e.snapshot(ctx)
		if err != nil {
			return nil, err
		}
		cp.snap = s
	}
	return cp.snap, nil
}

// checkAll evaluates every check. It returns ok=false with one reason per check that does not hold;
// an error only when a check could not be evaluated.
func (e *Executor) checkAll(ctx context.Context, r *run, st *plan.Step, checks []plan.Check) (bool, []string, error) {
	cp := &checkPass{e: e, r: r, st: st}
	var reasons []string
	for _, c := range checks {
		ok, why, err := cp.check(ctx, c)
		if err != nil {
			return false, nil, fmt.Errorf("check %s (%s): %w", c.Type, c.Description, err)
		}
		if !ok {
			reasons = append(reasons, fmt.Sprintf("%s: %s", c.Type, why))
		}
	}
	return len(reasons) == 0, reasons, nil
}

// Check evaluates one check against the live cluster, outside any plan (for tools and tests). Checks
// that need a step context (BackupReadable, PodsRedirected since step start) see none.
func (e *Executor) Check(ctx context.Context, c plan.Check) (ok bool, reason string, err error) {
	cp := &checkPass{e: e, r: newRun(&plan.Plan{}, "", false), st: &plan.Step{}}
	cp.r.rec = &Record{}
	return cp.check(ctx, c)
}

func (cp *checkPass) check(ctx context.Context, c plan.Check) (bool, string, error) {
	switch c.Type {
	case plan.CheckDeploymentReady:
		return cp.e.deploymentReady(ctx, c.Object.Namespace, c.Object.Name)
	case plan.CheckDaemonSetRolledOut:
		return cp.e.daemonSetRolledOut(ctx, c.Object.Namespace, c.Object.Name, c.Params["version"])
	case plan.CheckNodeAgentReady:
		return cp.e.nodeAgentReady(ctx, c)
	case plan.CheckTagPointsTo:
		return cp.e.tagPointsTo(ctx, c)
	case plan.CheckDefaultRevision:
		return cp.e.defaultRevision(ctx, c.Params["revision"])
	case plan.CheckHelmReleaseVersion:
		return cp.e.helmReleaseVersion(ctx, c)
	case plan.CheckNodeDrained:
		return cp.e.nodeDrained(ctx, nodeOf(c), c.Params["ambientOnly"] == "true")
	case plan.CheckNodeSchedulable:
		return cp.e.nodeSchedulable(ctx, nodeOf(c))
	case plan.CheckRevisionExistsAndReady:
		return cp.e.revisionReady(ctx, c)
	case plan.CheckCRDsEstablished:
		return cp.e.crdsEstablished(ctx, c.Params["group"])
	case plan.CheckNoReferences:
		return cp.noReferences(ctx, c)
	case plan.CheckFindingsClear:
		return cp.findingsClear(ctx, c)
	case plan.CheckGatewayOwner:
		return cp.gatewayOwner(ctx, c)
	case plan.CheckWorkloadsOnRevision:
		return cp.workloadsOnRevision(ctx, c)
	case plan.CheckTrustedAccounts:
		return cp.trustedAccounts(ctx, c)
	case plan.CheckBackupReadable:
		return cp.backupReadable(ctx, c)
	case plan.CheckPodsRedirected:
		return cp.podsRedirected(ctx, c)
	case plan.CheckNoSandboxFailures:
		return cp.noSandboxFailures(ctx, c)
	}
	return false, "", fmt.Errorf("check type %q is unknown to this executor; upgrade ambientkit or fix the plan", c.Type)
}

func nodeOf(c plan.Check) string {
	if c.Params["node"] != "" {
		return c.Params["node"]
	}
	return c.Object.Name
}

// get reads one object, retrying transient errors; found=false when it does not exist.
func (e *Executor) get(ctx context.Context, key client.ObjectKey, obj client.Object) (bool, error) {
	found := true
	err := e.retry(ctx, fmt.Sprintf("get %T %s", obj, key), func(ctx context.Context) error {
		err := e.c.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) {
			found = false
			return nil
		}
		return err
	})
	if err != nil {
		return false, fmt.Errorf("read %s: %w", key, err)
	}
	return found, nil
}

// list runs one LIST (all pages), retrying transient errors page by page.
func (e *Executor) list(ctx context.Context, what string, l client.ObjectList, opts ...client.ListOption) error {
	return e.retry(ctx, "list "+what, func(ctx context.Context) error { return e.c.List(ctx, l, opts...) })
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podTag is the image tag of the pod's first container.
func podTag(p *corev1.Pod) string {
	if len(p.Spec.Containers) == 0 {
		return ""
	}
	return imageTag(p.Spec.Containers[0].Image)
}

func (e *Executor) deploymentReady(ctx context.Context, ns, name string) (bool, string, error) {
	var d appsv1.Deployment
	found, err := e.get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d)
	if err != nil || !found {
		return false, fmt.Sprintf("Deployment %s/%s does not exist", ns, name), err
	}
	want := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status
	switch {
	case s.ObservedGeneration < d.Generation:
		return false, fmt.Sprintf("Deployment %s/%s: the controller has not seen generation %d yet (observed %d)", ns, name, d.Generation, s.ObservedGeneration), nil
	case want == 0:
		return false, fmt.Sprintf("Deployment %s/%s is scaled to 0", ns, name), nil
	case s.UpdatedReplicas != want || s.ReadyReplicas != want || s.AvailableReplicas != want || s.Replicas != want:
		return false, fmt.Sprintf("Deployment %s/%s: %d/%d updated, %d ready, %d available, %d pods in all", ns, name, s.UpdatedReplicas, want, s.ReadyReplicas, s.AvailableReplicas, s.Replicas), nil
	}
	return true, "", nil
}

func (e *Executor) statefulSetReady(ctx context.Context, ns, name string) (bool, string, error) {
	var ss appsv1.StatefulSet
	found, err := e.get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ss)
	if err != nil || !found {
		return false, fmt.Sprintf("StatefulSet %s/%s does not exist", ns, name), err
	}
	want := ptr.Deref(ss.Spec.Replicas, 1)
	s := ss.Status
	switch {
	case s.ObservedGeneration < ss.Generation:
		return false, fmt.Sprintf("StatefulSet %s/%s: the controller has not seen generation %d yet", ns, name, ss.Generation), nil
	case s.UpdatedReplicas != want || s.ReadyReplicas != want || s.AvailableReplicas != want ||
		(s.UpdateRevision != "" && s.CurrentRevision != s.UpdateRevision):
		return false, fmt.Sprintf("StatefulSet %s/%s: %d/%d updated, %d ready, %d available", ns, name, s.UpdatedReplicas, want, s.ReadyReplicas, s.AvailableReplicas), nil
	}
	return true, "", nil
}

// rolloutDone reports whether a restarted workload finished rolling out.
func (e *Executor) rolloutDone(ctx context.Context, w mesh.ObjectRef) (bool, string, error) {
	switch w.Kind {
	case "Deployment":
		return e.deploymentReady(ctx, w.Namespace, w.Name)
	case "StatefulSet":
		return e.statefulSetReady(ctx, w.Namespace, w.Name)
	case "DaemonSet":
		return e.daemonSetRolledOut(ctx, w.Namespace, w.Name, "")
	}
	return false, "", fmt.Errorf("cannot follow the rollout of a %s", w.Kind)
}

func (e *Executor) daemonSetRolledOut(ctx context.Context, ns, name, version string) (bool, string, error) {
	var ds appsv1.DaemonSet
	found, err := e.get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ds)
	if err != nil || !found {
		return false, fmt.Sprintf("DaemonSet %s/%s does not exist", ns, name), err
	}
	s := ds.Status
	id := "DaemonSet " + ns + "/" + name
	if s.ObservedGeneration < ds.Generation {
		return false, fmt.Sprintf("%s: the controller has not seen generation %d yet (observed %d)", id, ds.Generation, s.ObservedGeneration), nil
	}
	if s.DesiredNumberScheduled == 0 {
		return false, id + ": no node is scheduled to run it", nil
	}
	if version != "" {
		if cs := ds.Spec.Template.Spec.Containers; len(cs) > 0 && !tagMatches(imageTag(cs[0].Image), version) {
			return false, fmt.Sprintf("%s: its template runs %s, want %s", id, cs[0].Image, version), nil
		}
	}
	want := s.DesiredNumberScheduled
	if s.NumberReady != want || s.NumberAvailable != want {
		return false, fmt.Sprintf("%s: %d ready, %d available of %d", id, s.NumberReady, s.NumberAvailable, want), nil
	}
	if s.UpdatedNumberScheduled == want {
		return true, "", nil
	}
	if ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType || version == "" {
		return false, fmt.Sprintf("%s: %d/%d pods updated", id, s.UpdatedNumberScheduled, want), nil
	}
	// OnDelete: updated counts lag by design; accept when every pod runs the version.
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return false, "", fmt.Errorf("%s has an invalid selector: %w", id, err)
	}
	var pods corev1.PodList
	if err := e.list(ctx, "pods of "+id, &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return false, "", err
	}
	good := 0
	var old []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if c := metav1.GetControllerOf(p); c == nil || c.UID != ds.UID || p.DeletionTimestamp != nil {
			continue
		}
		if tagMatches(podTag(p), version) && podReady(p) {
			good++
		} else {
			old = append(old, fmt.Sprintf("%s on %s (%s)", p.Name, p.Spec.NodeName, podTag(p)))
		}
	}
	if int32(good) < want {
		return false, fmt.Sprintf("%s (OnDelete): %d/%d pods ready at %s; not yet: %s", id, good, want, version, limitList(old, 5)), nil
	}
	return true, "", nil
}

// nodeAgentReady: a ready, non-terminating pod of the DaemonSet runs the version on the node (one LIST
// of the namespace's pods on that node), or with all=true on every ready node the DaemonSet selects.
func (e *Executor) nodeAgentReady(ctx context.Context, c plan.Check) (bool, string, error) {
	ns, name, version := c.Object.Namespace, c.Object.Name, c.Params["version"]
	id := "DaemonSet " + ns + "/" + name
	ours := func(p *corev1.Pod) bool {
		ctl := metav1.GetControllerOf(p)
		return ctl != nil && ctl.Kind == "DaemonSet" && ctl.Name == name && p.DeletionTimestamp == nil &&
			podReady(p) && (version == "" || tagMatches(podTag(p), version))
	}
	if c.Params["all"] != "true" {
		node := c.Params["node"]
		if node == "" {
			return false, "", errors.New("NodeAgentReady needs params.node or params.all=true; fix the plan")
		}
		var pods corev1.PodList
		if err := e.list(ctx, "pods of "+id+" on "+node, &pods, client.InNamespace(ns), client.MatchingFields{"spec.nodeName": node}); err != nil {
			return false, "", err
		}
		var seen []string
		for i := range pods.Items {
			p := &pods.Items[i]
			if ours(p) {
				return true, "", nil
			}
			if ctl := metav1.GetControllerOf(p); ctl != nil && ctl.Kind == "DaemonSet" && ctl.Name == name {
				seen = append(seen, fmt.Sprintf("%s runs %s, ready=%v, terminating=%v", p.Name, podTag(p), podReady(p), p.DeletionTimestamp != nil))
			}
		}
		if len(seen) == 0 {
			return false, fmt.Sprintf("no pod of %s runs on node %s", id, node), nil
		}
		return false, fmt.Sprintf("no ready %s pod at %s on node %s (%s)", id, orAny(version), node, strings.Join(seen, "; ")), nil
	}
	var ds appsv1.DaemonSet
	found, err := e.get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ds)
	if err != nil || !found {
		return false, id + " does not exist", err
	}
	var nodes corev1.NodeList
	if err := e.list(ctx, "nodes", &nodes); err != nil {
		return false, "", err
	}
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return false, "", fmt.Errorf("%s has an invalid selector: %w", id, err)
	}
	var pods corev1.PodList
	if err := e.list(ctx, "pods of "+id, &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return false, "", err
	}
	good := map[string]bool{}
	for i := range pods.Items {
		if ours(&pods.Items[i]) {
			good[pods.Items[i].Spec.NodeName] = true
		}
	}
	nodeSel := labels.SelectorFromSet(ds.Spec.Template.Spec.NodeSelector)
	var missing []string
	eligible := 0
	for _, n := range nodes.Items {
		if !nodeSel.Matches(labels.Set(n.Labels)) || !nodeReady(&n) {
			continue
		}
		eligible++
		if !good[n.Name] {
			missing = append(missing, n.Name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return false, fmt.Sprintf("%d of %d nodes have no ready %s pod at %s: %s", len(missing), eligible, id, orAny(version), limitList(missing, 8)), nil
	}
	return true, "", nil
}

func orAny(v string) string {
	if v == "" {
		return "any version"
	}
	return v
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (e *Executor) tagPointsTo(ctx context.Context, c plan.Check) (bool, string, error) {
	tag, rev := c.Params["tag"], c.Params["revision"]
	name := "istio-revision-tag-" + tag
	if c.Object.Kind == "MutatingWebhookConfiguration" && c.Object.Name != "" {
		name = c.Object.Name
	}
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	found, err := e.get(ctx, client.ObjectKey{Name: name}, &mwc)
	if err != nil || !found {
		return false, fmt.Sprintf("MutatingWebhookConfiguration %s does not exist", name), err
	}
	if got := mwc.Labels[mesh.LabelRev]; got != rev {
		return false, fmt.Sprintf("MutatingWebhookConfiguration %s is labelled %s=%s, want %s", name, mesh.LabelRev, got, rev), nil
	}
	return true, "", nil
}

func (e *Executor) defaultRevision(ctx context.Context, rev string) (bool, string, error) {
	const name = "istiod-default-validator"
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	found, err := e.get(ctx, client.ObjectKey{Name: name}, &vwc)
	if err != nil || !found {
		return false, "ValidatingWebhookConfiguration " + name + " does not exist", err
	}
	if got := vwc.Labels[mesh.LabelRev]; got != rev {
		return false, fmt.Sprintf("ValidatingWebhookConfiguration %s is labelled %s=%s, want %s", name, mesh.LabelRev, got, rev), nil
	}
	return true, "", nil
}

func (e *Executor) helmReleaseVersion(ctx context.Context, c plan.Check) (bool, string, error) {
	ns, name, want := c.Object.Namespace, c.Object.Name, c.Params["version"]
	rel, err := e.helmGet(ctx, name, ns)
	if err != nil {
		return false, "", err
	}
	switch {
	case rel == nil:
		return false, fmt.Sprintf("Helm release %s/%s does not exist", ns, name), nil
	case rel.Status != "deployed":
		return false, fmt.Sprintf("Helm release %s/%s is %s", ns, name, rel.Status), nil
	case want != "" && rel.ChartVersion != want:
		return false, fmt.Sprintf("Helm release %s/%s is at chart %s, want %s", ns, name, rel.ChartVersion, want), nil
	}
	return true, "", nil
}

func (e *Executor) nodeDrained(ctx context.Context, node string, ambientOnly bool) (bool, string, error) {
	var pods corev1.PodList
	if err := e.list(ctx, "pods on node "+node, &pods, client.MatchingFields{"spec.nodeName": node}); err != nil {
		return false, "", err
	}
	var ambientNS map[string]bool
	if ambientOnly {
		var err error
		if ambientNS, err = e.ambientNamespaces(ctx); err != nil {
			return false, "", err
		}
	}
	var left []string
	for i := range pods.Items {
		if ambientOnly && !ambientCaptured(&pods.Items[i], ambientNS) {
			continue
		}
		if !stays(&pods.Items[i]) {
			left = append(left, pods.Items[i].Namespace+"/"+pods.Items[i].Name)
		}
	}
	if len(left) > 0 {
		return false, fmt.Sprintf("%s besides DaemonSet pods still on node %s: %s", plural(len(left), "pod", "pods"), node, limitList(left, 8)), nil
	}
	return true, "", nil
}

func (e *Executor) nodeSchedulable(ctx context.Context, node string) (bool, string, error) {
	var n corev1.Node
	found, err := e.get(ctx, client.ObjectKey{Name: node}, &n)
	if err != nil || !found {
		return false, "node " + node + " does not exist", err
	}
	if n.Spec.Unschedulable {
		return false, "node " + node + " is cordoned", nil
	}
	return true, "", nil
}

func (e *Executor) revisionReady(ctx context.Context, c plan.Check) (bool, string, error) {
	rev := c.Params["revision"]
	ns, name := c.Object.Namespace, c.Object.Name
	if c.Object.Kind != "Deployment" || name == "" {
		name = "istiod-" + rev
		if rev == "default" {
			name = "istiod"
		}
	}
	if ns == "" {
		ns = DefaultNamespace
	}
	return e.deploymentReady(ctx, ns, name)
}

// crdsEstablished: every CRD of the group (or a subgroup: *.istio.io) is Established (one LIST).
func (e *Executor) crdsEstablished(ctx context.Context, group string) (bool, string, error) {
	if group == "" {
		group = "istio.io"
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("apiextensions.k8s.io/v1")
	list.SetKind("CustomResourceDefinitionList")
	if err := e.list(ctx, "CustomResourceDefinitions", list); err != nil {
		return false, "", err
	}
	n := 0
	var not []string
	for _, crd := range list.Items {
		g, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		if g != group && !strings.HasSuffix(g, "."+group) {
			continue
		}
		n++
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		ok := false
		for _, ci := range conds {
			cm, _ := ci.(map[string]any)
			if cm["type"] == "Established" && cm["status"] == "True" {
				ok = true
			}
		}
		if !ok {
			not = append(not, crd.GetName())
		}
	}
	switch {
	case n == 0:
		return false, fmt.Sprintf("no CustomResourceDefinition of group %s or *.%s exists", group, group), nil
	case len(not) > 0:
		sort.Strings(not)
		return false, fmt.Sprintf("%d of %d CRDs of *.%s are not Established: %s", len(not), n, group, limitList(not, 6)), nil
	}
	return true, "", nil
}

// ---- checks on a fresh snapshot ----

func (cp *checkPass) noReferences(ctx context.Context, c plan.Check) (bool, string, error) {
	s, err := cp.snapshot(ctx)
	if err != nil {
		return false, "", err
	}
	rev := c.Params["revision"]
	var what []string
	if c.Params["gone"] == "true" {
		if r, ok := s.Revision(rev); ok {
			what = append(what, fmt.Sprintf("istiod Deployment %s/%s of revision %s still runs", r.Namespace, r.Deployment, rev))
		}
	}
	for _, ref := range revision.References(s, rev) {
		what = append(what, ref.String())
	}
	if len(what) > 0 {
		return false, fmt.Sprintf("revision %s is still referred to: %s", rev, limitList(what, 8)), nil
	}
	return true, "", nil
}

// waivers are the codes the plan was made with plus Options.Waive, known codes only.
func (cp *checkPass) waivers() []plan.Code {
	var out []plan.Code
	for _, c := range strings.Split(cp.r.p.Metadata.Options["waive"], ",") {
		if c = strings.TrimSpace(c); c != "" && plan.KnownCode(plan.Code(c)) {
			out = append(out, plan.Code(c))
		}
	}
	for _, c := range cp.e.opts.Waive {
		if plan.KnownCode(c) {
			out = append(out, c)
		}
	}
	return out
}

func (cp *checkPass) findingsClear(ctx context.Context, c plan.Check) (bool, string, error) {
	var target mesh.Version
	if t := c.Params["target"] + c.Params["version"]; t != "" {
		if c.Params["target"] != "" {
			t = c.Params["target"]
		} else {
			t = c.Params["version"]
		}
		v, err := mesh.ParseVersion(t)
		if err != nil {
			return false, "", fmt.Errorf("params target/version %q: %w; fix the plan", t, err)
		}
		target = v
	}
	s, err := cp.snapshot(ctx)
	if err != nil {
		return false, "", err
	}
	if c.Params["component"] == "control-plane" {
		var have []string
		for _, r := range s.Revisions {
			if r.Ready() && !r.Version.IsZero() && (target.IsZero() || r.Version.MinorIndex() >= target.MinorIndex()) {
				return true, "", nil
			}
			have = append(have, fmt.Sprintf("%s (%s, ready=%v)", r.Name, r.Version, r.Ready()))
		}
		return false, fmt.Sprintf("no ready control plane at %s or newer; revisions: %s", target.MinorString(), orNone(have)), nil
	}
	comp, err := ambient.ComputeCompatibility(s, ambient.CompatibilityOptions{Target: target, Strategy: ambient.Strategy(c.Params["strategy"]),
		Today: cp.e.clock.Now(), Waive: cp.waivers()})
	if err != nil {
		return false, "", err
	}
	stop := plan.Stopping(comp.Findings)
	if len(stop) == 0 {
		return true, "", nil
	}
	var what []string
	for _, f := range stop {
		what = append(what, f.String())
	}
	return false, fmt.Sprintf("%s stop it: %s", plural(len(stop), "finding", "findings"), limitList(what, 6)), nil
}

func (cp *checkPass) gatewayOwner(ctx context.Context, c plan.Check) (bool, string, error) {
	s, err := cp.snapshot(ctx)
	if err != nil {
		return false, "", err
	}
	want := c.Params["revision"]
	for _, g := range s.Gateways {
		if g.Kind != c.Object.Kind || g.Namespace != c.Object.Namespace || g.Name != c.Object.Name {
			continue
		}
		if g.Revision == want || (g.Revision != "" && s.ResolveRevision(want) == g.Revision) {
			return true, "", nil
		}
		return false, fmt.Sprintf("%s is owned by revision %q, want %q", c.Object, g.Revision, want), nil
	}
	return false, fmt.Sprintf("%s was not found among the mesh's gateways", c.Object), nil
}

func (cp *checkPass) workloadsOnRevision(ctx context.Context, c plan.Check) (bool, string, error) {
	s, err := cp.snapshot(ctx)
	if err != nil {
		return false, "", err
	}
	rev, tag := c.Params["revision"], c.Params["tag"]
	var refs []mesh.ObjectRef
	if cp.st.Restart != nil {
		refs = cp.st.Restart.Workloads
	} else {
		for _, w := range s.Workloads {
			ns, _ := s.Namespace(w.Namespace)
			if len(w.SidecarRevisions) > 0 && (w.PodRevisionLabel == tag || (w.PodRevisionLabel == "" && ns.Labels[mesh.LabelRev] == tag)) {
				refs = append(refs, w.Ref())
			}
		}
	}
	byRef := map[mesh.ObjectRef]mesh.Workload{}
	for _, w := range s.Workloads {
		byRef[w.Ref()] = w
	}
	var bad []string
	for _, ref := range refs {
		w, ok := byRef[ref]
		if !ok {
			bad = append(bad, ref.String()+" has no pods")
			continue
		}
		if n := w.SidecarRevisions[rev]; n != w.Pods {
			bad = append(bad, fmt.Sprintf("%s: %d of %d pods injected by %s (%v)", ref, n, w.Pods, rev, w.SidecarRevisions))
		}
	}
	if len(bad) > 0 {
		return false, limitList(bad, 6), nil
	}
	return true, "", nil
}

func (cp *checkPass) trustedAccounts(ctx context.Context, c plan.Check) (bool, string, error) {
	s, err := cp.snapshot(ctx)
	if err != nil {
		return false, "", err
	}
	var want []string
	if a := c.Params["accounts"]; a != "" {
		want = strings.Split(a, ",")
	} else {
		for _, z := range s.Ztunnels {
			want = append(want, z.Account())
		}
	}
	var bad []string
	for _, r := range s.Revisions {
		if c.Params["revision"] != "" && r.Name != c.Params["revision"] {
			continue
		}
		if r.TrustedAccountsUnknown {
			bad = append(bad, fmt.Sprintf("revision %s reads its trusted accounts from a ConfigMap or Secret the snapshot cannot read", r.Name))
			continue
		}
		for _, a := range want {
			found := false
			for _, t := range r.TrustedZtunnelAccounts {
				if t == a {
					found = true
				}
			}
			if !found {
				bad = append(bad, fmt.Sprintf("revision %s does not trust %s (trusts %s)", r.Name, a, orNone(r.TrustedZtunnelAccounts)))
			}
		}
	}
	if len(bad) > 0 {
		return false, limitList(bad, 6), nil
	}
	return true, "", nil
}

func (cp *checkPass) backupReadable(ctx context.Context, c plan.Check) (bool, string, error) {
	id := c.Params["step"]
	if id == "" {
		id = cp.st.ID
	}
	rec := cp.r.rec.Steps[id]
	if rec == nil || rec.State["digest"] == "" {
		return false, fmt.Sprintf("step %s has written no backup", id), nil
	}
	b, err := cp.e.readBackup(ctx, cp.r, id, rec.State["digest"])
	if errors.Is(err, ErrNoBackup) {
		return false, err.Error(), nil
	}
	if err != nil {
		return false, "", err
	}
	return true, fmt.Sprintf("%d entries read back", len(b.Entries)), nil
}

// podsRedirected: ambient pods (created since the step started, with since=step-start) that run carry
// ambient.istio.io/redirection=enabled. One LIST of namespaces, one (paged) LIST of pods.
func (cp *checkPass) podsRedirected(ctx context.Context, c plan.Check) (bool, string, error) {
	e := cp.e
	var since time.Time
	if c.Params["since"] == "step-start" {
		if rec := cp.r.rec.Steps[cp.st.ID]; rec != nil {
			since = rec.Started
		}
	}
	var nss corev1.NamespaceList
	if err := e.list(ctx, "namespaces", &nss); err != nil {
		return false, "", err
	}
	ambientNS := map[string]bool{}
	for _, n := range nss.Items {
		ambientNS[n.Name] = n.Labels[mesh.LabelDataplaneMode] == "ambient"
	}
	var bad []string
	checked := 0
	err := e.eachPod(ctx, func(p *corev1.Pod) {
		if p.CreationTimestamp.Time.Before(since) || p.Status.Phase != corev1.PodRunning || p.Spec.HostNetwork || p.Namespace == "kube-system" {
			return
		}
		if _, sidecar := p.Annotations[mesh.AnnotationSidecarStatus]; sidecar {
			return
		}
		mode := p.Labels[mesh.LabelDataplaneMode]
		if mode == "none" || (mode != "ambient" && !ambientNS[p.Namespace]) {
			return
		}
		checked++
		if v := p.Annotations[mesh.AnnotationRedirection]; v != "enabled" {
			if v == "" {
				v = "absent"
			}
			bad = append(bad, fmt.Sprintf("%s/%s (%s)", p.Namespace, p.Name, v))
		}
	})
	if err != nil {
		return false, "", err
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return false, fmt.Sprintf("%d of %d ambient pods are not redirected: %s", len(bad), checked, limitList(bad, 8)), nil
	}
	return true, "", nil
}

// eachPod pages through every pod of the cluster (one LIST, in pages).
func (e *Executor) eachPod(ctx context.Context, fn func(*corev1.Pod)) error {
	cont := ""
	for {
		var pods corev1.PodList
		opts := []client.ListOption{client.Limit(listPageSize)}
		if cont != "" {
			opts = append(opts, client.Continue(cont))
		}
		if err := e.list(ctx, "pods", &pods, opts...); err != nil {
			return err
		}
		for i := range pods.Items {
			fn(&pods.Items[i])
		}
		if cont = pods.Continue; cont == "" {
			return nil
		}
	}
}

// noSandboxFailures: one LIST of Events with reason FailedCreatePodSandBox. A pod whose sandbox
// creation through istio-cni has kept failing for longer than the retry window, and failed within the
// window, fails the check; shorter failure runs are the retries a CNI rollout causes and are reported
// as SandboxRetry events.
func (cp *checkPass) noSandboxFailures(ctx context.Context, c plan.Check) (bool, string, error) {
	e := cp.e
	window := 120 * time.Second
	if w := c.Params["retryWindowSeconds"]; w != "" {
		if n := atoi(w); n > 0 {
			window = time.Duration(n) * time.Second
		}
	}
	plugin := c.Params["plugin"]
	if plugin == "" {
		plugin = "istio-cni"
	}
	var since time.Time
	if rec := cp.r.rec.Steps[cp.st.ID]; rec != nil {
		since = rec.Started
	}
	var evs corev1.EventList
	if err := e.list(ctx, "FailedCreatePodSandBox events", &evs, client.MatchingFields{"reason": "FailedCreatePodSandBox"}); err != nil {
		return false, "", err
	}
	type span struct{ first, last time.Time }
	spans := map[string]*span{}
	for _, ev := range evs.Items {
		if ev.Reason != "FailedCreatePodSandBox" || ev.InvolvedObject.Kind != "Pod" || !strings.Contains(ev.Message, plugin) {
			continue
		}
		first, last := eventTimes(&ev)
		if last.Before(since) {
			continue
		}
		key := ev.InvolvedObject.Namespace + "/" + ev.InvolvedObject.Name
		s, ok := spans[key]
		if !ok {
			s = &span{first: first, last: last}
			spans[key] = s
		}
		if first.Before(s.first) {
			s.first = first
		}
		if last.After(s.last) {
			s.last = last
		}
	}
	now := e.clock.Now()
	var failing, transientPods []string
	for pod, s := range spans {
		if s.last.Sub(s.first) >= window && now.Sub(s.last) < window {
			failing = append(failing, fmt.Sprintf("%s (failing for %s)", pod, s.last.Sub(s.first).Round(time.Second)))
		} else if !cp.r.reported[pod] {
			cp.r.reported[pod] = true
			transientPods = append(transientPods, pod)
		}
	}
	sort.Strings(failing)
	sort.Strings(transientPods)
	if len(transientPods) > 0 {
		ev := e.stepEvent(cp.r, cp.st, EventSandboxRetry, fmt.Sprintf("%s retried sandbox creation through %s within the %s window (expected during a CNI rollout): %s",
			plural(len(transientPods), "pod", "pods"), plugin, window, limitList(transientPods, 8)))
		ev.Pods = transientPods
		e.emit(ev)
	}
	if len(failing) > 0 {
		return false, fmt.Sprintf("%s keep failing sandbox creation through %s beyond %s: %s; look at the istio-cni agent on their nodes",
			plural(len(failing), "pod", "pods"), plugin, window, limitList(failing, 8)), nil
	}
	return true, "", nil
}

func eventTimes(ev *corev1.Event) (first, last time.Time) {
	first, last = ev.FirstTimestamp.Time, ev.LastTimestamp.Time
	if !ev.EventTime.IsZero() {
		if first.IsZero() {
			first = ev.EventTime.Time
		}
		if last.IsZero() || ev.EventTime.After(last) {
			last = ev.EventTime.Time
		}
	}
	if ev.Series != nil && ev.Series.LastObservedTime.After(last) {
		last = ev.Series.LastObservedTime.Time
	}
	if first.IsZero() {
		first = last
	}
	return first, last
}
