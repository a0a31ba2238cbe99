package upgrade

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/e2e/executorbench/limit"
	"github.com/ambientkit/ambientkit/e2e/internal/kube"
)

// Watcher checks, from every pod and PodDisruptionBudget event (informers, so nothing between two
// polls is missed), that:
//
//   - no ambient node is ever without a ready ztunnel: whenever a node has a pod ambient captures (in a
//     namespace labelled istio.io/dataplane-mode=ambient or labelled so itself, not opted out with
//     dataplane-mode=none, not injected with a sidecar, not on the host network, bound to the node and
//     not finished, terminating pods included since they still run), it must have a ready,
//     non-terminating ztunnel pod;
//   - no PodDisruptionBudget that was healthy when the watcher started is ever violated
//     (status.currentHealthy < status.desiredHealthy);
//   - no node ever has pods of two ztunnels (terminating ones included: istio-cni hands new pods to
//     the newest, so a second one splits the node's traffic);
//   - (recorded, for the caller to judge) which nodes drain when: a node drains from the first eviction
//     of a pod on it (kube.Evicted) until its last evicted pod is gone, so a caller can count the
//     nodes that drained at the same time (Report.MostDraining);
//   - with Options.Trust, every istiod Deployment trusts (env CA_TRUSTED_NODE_ACCOUNTS) the account
//     of every ztunnel that has a pod that is not terminating.
//
// Namespaces are read once at start: the feature changes no namespace's dataplane mode while it runs.
type Watcher struct {
	// ZtunnelNamespaces and ZtunnelApp select ztunnel pods (namespaces, label app).
	ZtunnelNamespaces map[string]bool
	ZtunnelApp        string

	mu        sync.Mutex
	synced    bool
	ambientNS map[string]bool
	pods      map[string]podState // by namespace/name
	zt        map[string]map[string]bool
	amb       map[string]map[string]bool
	open      map[string]*Gap
	gaps      []Gap
	ambNodes  map[string]bool
	events    int
	ztDeleted int
	ztCreated int

	doubleOpen map[string]*Double
	doubles    []Double

	trust     bool
	istiods   map[string]map[string]bool // istiod Deployment → accounts it trusts
	trustOpen map[string]*TrustGap       // istiod|account
	trustGaps []TrustGap
	trustSeen map[string]bool // accounts seen running

	pdbHealthyAtStart map[string]bool
	pdbOpen           map[string]*PDBViolation
	pdbViolations     []PDBViolation
	pdbMinMargin      map[string]int32
	pdbEvents         int

	// evicting is, per node, the evicted pods still terminating there; drainOpen when the node's
	// drain began; drains the drains that ended.
	evicting  map[string]map[string]bool
	drainOpen map[string]time.Time
	drains    []Drain

	cancel context.CancelFunc
	done   chan struct{}
}

// Gap is a time an ambient node had no ready ztunnel.
type Gap struct {
	Node       string
	Start, End time.Time // End is zero while it lasts
	// AmbientPods on the node when it began; Ztunnels the ztunnel pods there then (name, ready, terminating).
	AmbientPods []string
	Ztunnels    []string
}

func (g Gap) String() string {
	end := "still open"
	if !g.End.IsZero() {
		end = fmt.Sprintf("for %s", g.End.Sub(g.Start).Round(time.Millisecond))
	}
	return fmt.Sprintf("node %s had no ready ztunnel at %s (%s) while running ambient pods %v; ztunnel pods there: %v",
		g.Node, g.Start.Format("15:04:05.000"), end, g.AmbientPods, g.Ztunnels)
}

// Double is a time a node had pods of two ztunnels.
type Double struct {
	Node       string
	Start, End time.Time
	Pods       []string
}

func (d Double) String() string {
	end := "still open"
	if !d.End.IsZero() {
		end = fmt.Sprintf("for %s", d.End.Sub(d.Start).Round(time.Millisecond))
	}
	return fmt.Sprintf("node %s ran two ztunnels at %s (%s): %v", d.Node, d.Start.Format("15:04:05.000"), end, d.Pods)
}

// TrustGap is a time an istiod did not trust a ztunnel that had running pods.
type TrustGap struct {
	Istiod, Account string
	Start, End      time.Time
	Trusted         []string
}

func (g TrustGap) String() string {
	end := "still open"
	if !g.End.IsZero() {
		end = fmt.Sprintf("for %s", g.End.Sub(g.Start).Round(time.Millisecond))
	}
	return fmt.Sprintf("istiod %s did not trust running ztunnel %s at %s (%s); it trusted %v", g.Istiod, g.Account, g.Start.Format("15:04:05.000"), end, g.Trusted)
}

// Drain is a time a node drained: from the first eviction of a pod on it to its last evicted pod gone.
type Drain struct {
	Node       string
	Start, End time.Time // End is zero while it lasts
}

// PDBViolation is a time a budget had fewer healthy pods than it desires.
type PDBViolation struct {
	PDB                     string
	Start, End              time.Time
	CurrentHealthy, Desired int32
}

func (v PDBViolation) String() string {
	end := "still open"
	if !v.End.IsZero() {
		end = fmt.Sprintf("for %s", v.End.Sub(v.Start).Round(time.Millisecond))
	}
	return fmt.Sprintf("PodDisruptionBudget %s had %d healthy of %d desired at %s (%s)", v.PDB, v.CurrentHealthy, v.Desired, v.Start.Format("15:04:05.000"), end)
}

type podState struct {
	node     string
	account  string // ztunnel: namespace/serviceaccount
	ztunnel  bool   // a ztunnel pod
	ready    bool   // ztunnel: ready and not terminating
	ambient  bool   // an ambient-captured pod bound to node and not finished
	deleting bool
}

// Options select what a watcher watches beyond the default.
type Options struct {
	// ZtunnelNamespaces hold the ztunnel DaemonSets (pods labelled app=ztunnel).
	ZtunnelNamespaces []string
	// Trust, when set, also watches the istiod Deployments of this namespace for the trust invariant.
	Trust string
}

// StartWatcher watches the ztunnel pods of one namespace (see StartWatcherWith).
func StartWatcher(ctx context.Context, cs kubernetes.Interface, ztunnelNamespace string) (*Watcher, error) {
	return StartWatcherWith(ctx, cs, Options{ZtunnelNamespaces: []string{ztunnelNamespace}})
}

// StartWatcherWith lists the namespaces, starts the informers and returns once they have delivered
// the initial state and the state was checked once.
func StartWatcherWith(ctx context.Context, cs kubernetes.Interface, o Options) (*Watcher, error) {
	w := &Watcher{
		ZtunnelNamespaces: map[string]bool{}, ZtunnelApp: "ztunnel", doubleOpen: map[string]*Double{},
		trust: o.Trust != "", istiods: map[string]map[string]bool{}, trustOpen: map[string]*TrustGap{}, trustSeen: map[string]bool{},
		ambientNS: map[string]bool{}, pods: map[string]podState{}, zt: map[string]map[string]bool{}, amb: map[string]map[string]bool{},
		open: map[string]*Gap{}, ambNodes: map[string]bool{},
		pdbHealthyAtStart: map[string]bool{}, pdbOpen: map[string]*PDBViolation{}, pdbMinMargin: map[string]int32{},
		evicting: map[string]map[string]bool{}, drainOpen: map[string]time.Time{},
		done: make(chan struct{}),
	}
	for _, ns := range o.ZtunnelNamespaces {
		w.ZtunnelNamespaces[ns] = true
	}
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, n := range nss.Items {
		w.ambientNS[n.Name] = n.Labels[mesh.LabelDataplaneMode] == "ambient"
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.cancel = cancel
	f := informers.NewSharedInformerFactory(cs, 0)
	pods := f.Core().V1().Pods().Informer()
	pdbs := f.Policy().V1().PodDisruptionBudgets().Informer()
	podReg, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.pod(o, false) },
		UpdateFunc: func(_, o any) { w.pod(o, false) },
		DeleteFunc: func(o any) { w.pod(o, true) },
	})
	if err != nil {
		cancel()
		return nil, err
	}
	pdbReg, err := pdbs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.pdb(o) },
		UpdateFunc: func(_, o any) { w.pdb(o) },
	})
	if err != nil {
		cancel()
		return nil, err
	}
	synced := []cache.InformerSynced{podReg.HasSynced, pdbReg.HasSynced}
	if w.trust {
		tf := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(o.Trust))
		deps := tf.Apps().V1().Deployments().Informer()
		depReg, err := deps.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { w.istiod(o, false) },
			UpdateFunc: func(_, o any) { w.istiod(o, false) },
			DeleteFunc: func(o any) { w.istiod(o, true) },
		})
		if err != nil {
			cancel()
			return nil, err
		}
		synced = append(synced, depReg.HasSynced)
		tf.Start(wctx.Done())
		go func() { <-wctx.Done(); tf.Shutdown() }()
	}
	f.Start(wctx.Done())
	go func() {
		<-wctx.Done()
		f.Shutdown()
		close(w.done)
	}()
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	defer scancel()
	if !cache.WaitForCacheSync(sctx.Done(), synced...) {
		cancel()
		return nil, fmt.Errorf("watcher: informers did not sync within a minute")
	}
	w.mu.Lock()
	w.synced = true
	for n := range w.amb {
		w.check(n, time.Now())
	}
	for n := range w.zt {
		w.checkDouble(n, time.Now())
	}
	w.checkTrust(time.Now())
	w.mu.Unlock()
	return w, nil
}

// Stop stops the informers.
func (w *Watcher) Stop() {
	w.cancel()
	<-w.done
}

func (w *Watcher) pod(o any, deleted bool) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o, deleted = d.Obj, true
	}
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	key := p.Namespace + "/" + p.Name
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	old, had := w.pods[key]
	var st podState
	if !deleted {
		st = w.classify(p)
	}
	if had {
		w.remove(key, old)
	}
	if w.synced && old.ztunnel && had && !old.deleting && (deleted || st.deleting) {
		w.ztDeleted++
	}
	if !deleted {
		if w.synced && st.ztunnel && !had {
			w.ztCreated++
		}
		w.pods[key] = st
		w.insert(key, st)
	} else {
		delete(w.pods, key)
	}
	if had && old.node != "" {
		w.check(old.node, now)
		w.checkDouble(old.node, now)
	}
	if !deleted && st.node != "" && st.node != old.node {
		w.check(st.node, now)
		w.checkDouble(st.node, now)
	}
	if st.ztunnel || old.ztunnel {
		w.checkTrust(now)
	}
	w.evictions(key, p, deleted, now)
}

// evictions opens a node's drain at the first eviction of a pod on it and closes it when its last
// evicted pod is gone; w.mu is held.
func (w *Watcher) evictions(key string, p *corev1.Pod, deleted bool, now time.Time) {
	node := p.Spec.NodeName
	if node == "" || !w.synced {
		return
	}
	set := w.evicting[node]
	switch {
	case !deleted && kube.Evicted(p):
		if set == nil {
			set = map[string]bool{}
			w.evicting[node] = set
		}
		if len(set) == 0 {
			w.drainOpen[node] = now
		}
		set[key] = true
	case set[key]:
		delete(set, key)
		if len(set) == 0 {
			w.drains = append(w.drains, Drain{Node: node, Start: w.drainOpen[node], End: now})
			delete(w.drainOpen, node)
		}
	}
}

// checkDouble opens or closes the node's double; w.mu is held.
func (w *Watcher) checkDouble(node string, now time.Time) {
	if !w.synced {
		return
	}
	owners := map[string]bool{}
	for _, st := range w.pods {
		if st.ztunnel && st.node == node {
			owners[st.account] = true
		}
	}
	d := w.doubleOpen[node]
	switch {
	case len(owners) > 1 && d == nil:
		w.doubleOpen[node] = &Double{Node: node, Start: now, Pods: w.ztunnelsOn(node)}
	case len(owners) <= 1 && d != nil:
		d.End = now
		w.doubles = append(w.doubles, *d)
		delete(w.doubleOpen, node)
	}
}

// istiod records the trust list of an istiod Deployment.
func (w *Watcher) istiod(o any, deleted bool) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o, deleted = d.Obj, true
	}
	d, ok := o.(*appsv1.Deployment)
	if !ok || d.Labels["app"] != "istiod" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if deleted || d.DeletionTimestamp != nil || (d.Spec.Replicas != nil && *d.Spec.Replicas == 0) {
		delete(w.istiods, d.Name)
	} else {
		trusted := map[string]bool{}
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == "CA_TRUSTED_NODE_ACCOUNTS" {
					for _, a := range strings.Split(e.Value, ",") {
						trusted[a] = true
					}
				}
			}
		}
		w.istiods[d.Name] = trusted
	}
	w.checkTrust(time.Now())
}

// checkTrust opens or closes trust gaps; w.mu is held.
func (w *Watcher) checkTrust(now time.Time) {
	if !w.synced || !w.trust {
		return
	}
	running := map[string]bool{}
	for _, st := range w.pods {
		if st.ztunnel && !st.deleting && st.node != "" {
			running[st.account] = true
			w.trustSeen[st.account] = true
		}
	}
	want := map[string]bool{}
	for name, trusted := range w.istiods {
		for a := range running {
			k := name + "|" + a
			want[k] = true
			g := w.trustOpen[k]
			switch {
			case !trusted[a] && g == nil:
				w.trustOpen[k] = &TrustGap{Istiod: name, Account: a, Start: now, Trusted: sortedKeys(trusted)}
			case trusted[a] && g != nil:
				g.End = now
				w.trustGaps = append(w.trustGaps, *g)
				delete(w.trustOpen, k)
			}
		}
	}
	for k, g := range w.trustOpen {
		if !want[k] {
			g.End = now
			w.trustGaps = append(w.trustGaps, *g)
			delete(w.trustOpen, k)
		}
	}
}

func (w *Watcher) classify(p *corev1.Pod) podState {
	st := podState{node: p.Spec.NodeName, deleting: p.DeletionTimestamp != nil}
	if w.ZtunnelNamespaces[p.Namespace] && p.Labels["app"] == w.ZtunnelApp {
		st.ztunnel = true
		st.account = p.Namespace + "/" + p.Spec.ServiceAccountName
		st.ready = !st.deleting && p.Status.Phase == corev1.PodRunning && kube.PodReady(p)
		return st
	}
	if st.node == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.Spec.HostNetwork {
		return st
	}
	if _, sidecar := p.Annotations[mesh.AnnotationSidecarStatus]; sidecar {
		return st
	}
	mode := p.Labels[mesh.LabelDataplaneMode]
	st.ambient = mode == "ambient" || (mode != "none" && w.ambientNS[p.Namespace])
	return st
}

func (w *Watcher) remove(key string, st podState) {
	if st.node == "" {
		return
	}
	delete(w.zt[st.node], key)
	delete(w.amb[st.node], key)
}

func (w *Watcher) insert(key string, st podState) {
	if st.node == "" {
		return
	}
	if st.ztunnel && st.ready {
		if w.zt[st.node] == nil {
			w.zt[st.node] = map[string]bool{}
		}
		w.zt[st.node][key] = true
	}
	if st.ambient {
		if w.amb[st.node] == nil {
			w.amb[st.node] = map[string]bool{}
		}
		w.amb[st.node][key] = true
	}
}

// check opens or closes the node's gap; w.mu is held.
func (w *Watcher) check(node string, now time.Time) {
	if !w.synced {
		return
	}
	ambient := len(w.amb[node]) > 0
	ready := len(w.zt[node]) > 0
	if ambient {
		w.ambNodes[node] = true
	}
	g := w.open[node]
	switch {
	case ambient && !ready && g == nil:
		g = &Gap{Node: node, Start: now, AmbientPods: sortedKeys(w.amb[node]), Ztunnels: w.ztunnelsOn(node)}
		w.open[node] = g
	case (!ambient || ready) && g != nil:
		g.End = now
		w.gaps = append(w.gaps, *g)
		delete(w.open, node)
	}
}

func (w *Watcher) ztunnelsOn(node string) []string {
	var out []string
	for k, st := range w.pods {
		if st.ztunnel && st.node == node {
			out = append(out, fmt.Sprintf("%s(ready=%v,terminating=%v)", k, st.ready, st.deleting))
		}
	}
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (w *Watcher) pdb(o any) {
	b, ok := o.(*policyv1.PodDisruptionBudget)
	if !ok {
		return
	}
	now := time.Now()
	key := b.Namespace + "/" + b.Name
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pdbEvents++
	s := b.Status
	if s.ObservedGeneration < b.Generation {
		return // the disruption controller has not computed this spec yet
	}
	healthy := s.CurrentHealthy >= s.DesiredHealthy
	started, seen := w.pdbHealthyAtStart[key]
	if !seen {
		w.pdbHealthyAtStart[key] = healthy
		w.pdbMinMargin[key] = s.CurrentHealthy - s.DesiredHealthy
		return
	}
	if m := s.CurrentHealthy - s.DesiredHealthy; m < w.pdbMinMargin[key] {
		w.pdbMinMargin[key] = m
	}
	if !started {
		return
	}
	v := w.pdbOpen[key]
	switch {
	case !healthy && v == nil:
		w.pdbOpen[key] = &PDBViolation{PDB: key, Start: now, CurrentHealthy: s.CurrentHealthy, Desired: s.DesiredHealthy}
	case healthy && v != nil:
		v.End = now
		w.pdbViolations = append(w.pdbViolations, *v)
		delete(w.pdbOpen, key)
	}
}

// Report is what the watcher saw.
type Report struct {
	// Gaps are the times an ambient node had no ready ztunnel (open ones included): each is a violation.
	Gaps []Gap
	// PDBViolations are the times a budget that started healthy was violated (open ones included).
	PDBViolations []PDBViolation
	// PodEvents and PDBEvents count the informer events handled.
	PodEvents, PDBEvents int
	// ZtunnelPodsDeleted and ZtunnelPodsCreated count ztunnel pods seen going away and appearing
	// after the watcher started.
	ZtunnelPodsDeleted, ZtunnelPodsCreated int
	// AmbientNodes are the nodes that ran ambient pods at some point.
	AmbientNodes []string
	// PDBMinMargin is, per budget, the lowest currentHealthy - desiredHealthy seen.
	PDBMinMargin map[string]int32
	// PDBsHealthyAtStart are the budgets checked.
	PDBsHealthyAtStart []string
	// Doubles are the times a node had pods of two ztunnels (open ones included): each is a violation.
	Doubles []Double
	// TrustGaps are the times an istiod did not trust a running ztunnel (open ones included), with
	// Options.Trust; TrustedAtEnd is what each istiod trusts now, RunningAccounts the ztunnel accounts
	// ever seen running.
	TrustGaps       []TrustGap
	TrustedAtEnd    map[string][]string
	RunningAccounts []string
	// Drains are the times nodes drained (open ones included, End zero), by start.
	Drains []Drain
}

// MostDraining is the largest number of nodes draining at one instant, leaving out the nodes in
// except (a node someone else drained), and the nodes draining then; a drain still open counts
// until now.
func (r Report) MostDraining(except map[string]bool) (int, []string) {
	now := time.Now()
	var ivs []limit.Interval
	var ds []Drain
	for _, d := range r.Drains {
		if except[d.Node] {
			continue
		}
		if d.End.IsZero() {
			d.End = now
		}
		ds = append(ds, d)
		ivs = append(ivs, limit.Interval{Start: d.Start, End: d.End})
	}
	most := limit.MaxOverlap(ivs)
	for _, d := range ds { // the nodes of one instant with that many
		var at []string
		for _, o := range ds {
			if !o.Start.After(d.Start) && o.End.After(d.Start) {
				at = append(at, o.Node)
			}
		}
		if len(at) == most {
			sort.Strings(at)
			return most, at
		}
	}
	return most, nil
}

// Report returns what the watcher saw so far.
func (w *Watcher) Report() Report {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := Report{PodEvents: w.events, PDBEvents: w.pdbEvents, ZtunnelPodsDeleted: w.ztDeleted, ZtunnelPodsCreated: w.ztCreated,
		AmbientNodes: sortedKeys(w.ambNodes), PDBMinMargin: map[string]int32{}}
	r.Gaps = append(r.Gaps, w.gaps...)
	for _, g := range w.open {
		r.Gaps = append(r.Gaps, *g)
	}
	r.PDBViolations = append(r.PDBViolations, w.pdbViolations...)
	for _, v := range w.pdbOpen {
		r.PDBViolations = append(r.PDBViolations, *v)
	}
	for k, v := range w.pdbMinMargin {
		r.PDBMinMargin[k] = v
	}
	for k, ok := range w.pdbHealthyAtStart {
		if ok {
			r.PDBsHealthyAtStart = append(r.PDBsHealthyAtStart, k)
		}
	}
	sort.Strings(r.PDBsHealthyAtStart)
	r.Doubles = append(r.Doubles, w.doubles...)
	for _, d := range w.doubleOpen {
		r.Doubles = append(r.Doubles, *d)
	}
	r.TrustGaps = append(r.TrustGaps, w.trustGaps...)
	for _, g := range w.trustOpen {
		r.TrustGaps = append(r.TrustGaps, *g)
	}
	r.TrustedAtEnd = map[string][]string{}
	for name, trusted := range w.istiods {
		r.TrustedAtEnd[name] = sortedKeys(trusted)
	}
	r.RunningAccounts = sortedKeys(w.trustSeen)
	r.Drains = append(r.Drains, w.drains...)
	for n, start := range w.drainOpen {
		r.Drains = append(r.Drains, Drain{Node: n, Start: start})
	}
	sort.Slice(r.Drains, func(i, j int) bool { return r.Drains[i].Start.Before(r.Drains[j].Start) })
	sort.Slice(r.Doubles, func(i, j int) bool { return r.Doubles[i].Start.Before(r.Doubles[j].Start) })
	sort.Slice(r.TrustGaps, func(i, j int) bool { return r.TrustGaps[i].Start.Before(r.TrustGaps[j].Start) })
	sort.Slice(r.Gaps, func(i, j int) bool { return r.Gaps[i].Start.Before(r.Gaps[j].Start) })
	sort.Slice(r.PDBViolations, func(i, j int) bool { return r.PDBViolations[i].Start.Before(r.PDBViolations[j].Start) })
	return r
}

// Summary prints the report in one line.
func (r Report) Summary() string {
	var m []string
	for _, k := range sortedMarginKeys(r.PDBMinMargin) {
		m = append(m, fmt.Sprintf("%s=%d", k, r.PDBMinMargin[k]))
	}
	return fmt.Sprintf("%d pod events, %d PDB events; ztunnel pods deleted %d, created %d; ambient nodes seen %d; lowest PDB margins (healthy-desired) %s; %d ztunnel gaps on ambient nodes, %d nodes with two ztunnels, %d PDB violations, %d trust gaps (ztunnel accounts seen running %v)",
		r.PodEvents, r.PDBEvents, r.ZtunnelPodsDeleted, r.ZtunnelPodsCreated, len(r.AmbientNodes), strings.Join(m, " "), len(r.Gaps), len(r.Doubles), len(r.PDBViolations), len(r.TrustGaps), r.RunningAccounts)
}

func sortedMarginKeys(m map[string]int32) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
