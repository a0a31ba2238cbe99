package ztunnel

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ambientkit/ambientkit/ambient/compat"
	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
	"github.com/ambientkit/ambientkit/ambient/releases"
	"github.com/ambientkit/ambientkit/ambient/steps"
)

// NameBlueGreen names the blue-green strategy.
const NameBlueGreen = "blue-green"

// DefaultColourLabel is the node label that tells the running ztunnel's nodes (blue) from the new
// one's (green).
const DefaultColourLabel = "ambientkit.io/ztunnel"

// switchingValue marks a node whose ztunnel is being switched from blue to green: neither runs there.
const switchingValue = "switching"

// annotationDoNotDisrupt stops Karpenter from disrupting a node voluntarily (drift, consolidation,
// expiry): karpenter.sh/v1, docs concepts/disruption "Node-Level Controls".
const annotationDoNotDisrupt = "karpenter.sh/do-not-disrupt"

// Versions of the ztunnel chart the strategy depends on (istio/istio@<tag>:manifests/charts/ztunnel).
var (
	// affinityValue: the chart reads nodeSelector and affinity from 1.23 (templates/daemonset.yaml at
	// 1.23.0; 1.22.0 renders only the kubernetes.io/os selector).
	affinityValue = mesh.Version{Major: 1, Minor: 23}
)

// JobPolicy says what draining a node does with the pods of running Jobs.
type JobPolicy string

// Job policies.
const (
	// JobsWait leaves Job pods running: the drain waits until they finish. The default.
	JobsWait JobPolicy = "wait"
	// JobsEvict evicts them like any pod; a Job starts over only if its backoffLimit allows.
	JobsEvict JobPolicy = "evict"
)

// LocalStoragePolicy says what happens to pods with emptyDir volumes, whose data a drain loses.
type LocalStoragePolicy string

// Local storage policies.
const (
	// LocalStorageAsk puts an approval naming those pods before the first drain that loses data. The
	// default.
	LocalStorageAsk LocalStoragePolicy = "ask"
	// LocalStorageEvict drains them without asking.
	LocalStorageEvict LocalStoragePolicy = "evict"
)

// GreenCapacity says where the nodes of the new ztunnel come from. Set NodePools, or Relabel, or
// neither: then the caller adds nodes labelled green (Label=GreenValue) and the plan waits for Nodes
// of them.
type GreenCapacity struct {
	// NodePools are Karpenter NodePools (karpenter.sh/v1) whose templates get the green label, so
	// the nodes they launch from now on are green. Karpenter launches them for the pods the drains
	// evict, so the plan waits for no node unless Nodes is set.
	NodePools []string
	// Relabel are existing nodes that switch to green one at a time (drained first: two ztunnels
	// never run on one node).
	Relabel []string
	// Nodes is how many ready green nodes to wait for before workloads move; 0 means 1 (or every
	// relabelled node).
	Nodes int
}

// BlueGreen replaces ztunnel by node pool, as the seed runbook does by hand: the running ztunnel
// (blue) stays on its nodes, pinned there by a node affinity; a second ztunnel (green) is installed in
// its own namespace, with its own resource name, on nodes labelled green only; istiod trusts both;
// green capacity arrives (a Karpenter NodePool, relabelled nodes, or nodes the caller adds);
// workloads move off the blue nodes in batches, stateless first, then PodDisruptionBudget-bound and
// stateful ones, then the nodes running long Jobs, which are waited for; then blue is removed, istiod
// trusts green alone, and the blue nodes can go. The zero value is usable with capacity the caller
// adds.
type BlueGreen struct {
	// Namespace and ResourceName of green (the chart's resourceName: DaemonSet, ServiceAccount,
	// ClusterRole). Empty derives "ztunnel-<GreenValue>".
	Namespace, ResourceName string
	// Release is green's Helm release name; empty means ResourceName.
	Release string
	// Label is the node label key that tells the colours apart; empty means DefaultColourLabel.
	Label string
	// BlueValue and GreenValue are its values. Empty derives "blue" and "green", swapped when the
	// running ztunnel's nodes already carry "green" (the previous blue-green's green is this one's
	// blue).
	BlueValue, GreenValue string
	// Capacity says where green nodes come from.
	Capacity GreenCapacity
	// BatchSize is how many blue nodes are drained together; 0 means 1.
	BatchSize int
	// DrainTimeout bounds each node's drain; 0 means DefaultDrainTimeout. With JobsWait it also
	// bounds the wait for a node's Jobs.
	DrainTimeout time.Duration
	// Pace is how long each batch's health gate lets the mesh settle before asking; 0 means 30s.
	Pace time.Duration
	// Jobs says what drains do with running Jobs; empty means JobsWait.
	Jobs JobPolicy
	// LocalStorage says what happens to pods with emptyDir volumes; empty means LocalStorageAsk.
	LocalStorage LocalStoragePolicy
	// ScaleDownNodePool names a Karpenter NodePool of the blue nodes to stop (spec.limits cpu 0)
	// once blue is gone; empty leaves every NodePool alone.
	ScaleDownNodePool string
}

// Name returns "blue-green".
func (BlueGreen) Name() string { return NameBlueGreen }

// Settings returns the strategy's options for a plan's metadata.
func (g BlueGreen) Settings() map[string]string {
	out := map[string]string{"batchSize": strconv.Itoa(max(1, g.BatchSize)), "colourLabel": steps.OrDefault(g.Label, DefaultColourLabel)}
	if len(g.Capacity.NodePools) > 0 {
		out["greenNodePools"] = strings.Join(g.Capacity.NodePools, ",")
	}
	if len(g.Capacity.Relabel) > 0 {
		out["relabel"] = strconv.Itoa(len(g.Capacity.Relabel))
	}
	if g.Jobs == JobsEvict {
		out["jobs"] = string(JobsEvict)
	}
	return out
}

// Validate refuses options that contradict each other.
func (g BlueGreen) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	switch {
	case g.BatchSize < 0:
		bad("blue-green batch size %d is negative", g.BatchSize)
	case g.DrainTimeout < 0, g.Pace < 0:
		bad("blue-green drain timeout and pace cannot be negative")
	case len(g.Capacity.NodePools) > 0 && len(g.Capacity.Relabel) > 0:
		bad("green capacity: set NodePools or nodes to relabel, not both")
	case g.Capacity.Nodes < 0:
		bad("green capacity: %d nodes is negative", g.Capacity.Nodes)
	case g.ScaleDownNodePool != "" && steps.Contains(g.Capacity.NodePools, g.ScaleDownNodePool):
		bad("NodePool %q brings the green nodes; it cannot also be scaled down at the end", g.ScaleDownNodePool)
	}
	switch g.Jobs {
	case "", JobsWait, JobsEvict:
	default:
		bad("jobs policy %q is not %q or %q", g.Jobs, JobsWait, JobsEvict)
	}
	switch g.LocalStorage {
	case "", LocalStorageAsk, LocalStorageEvict:
	default:
		bad("local storage policy %q is not %q or %q", g.LocalStorage, LocalStorageAsk, LocalStorageEvict)
	}
	for _, v := range []string{g.BlueValue, g.GreenValue} {
		if v == switchingValue {
			bad("colour value %q is reserved for nodes being switched", v)
		}
	}
	if g.BlueValue != "" && g.BlueValue == g.GreenValue {
		bad("blue and green label values are both %q", g.BlueValue)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", plan.ErrInvalidOptions, errors.Join(errs...))
	}
	return nil
}

// BlueGreenOptions configure BlueGreenZtunnel.
type BlueGreenOptions struct {
	// Target is green's version (the ztunnel chart's version). Required.
	Target mesh.Version
	// Revision is the istiod revision green connects to; empty means the one blue connects to.
	Revision string
	// Strategy holds the blue-green options.
	Strategy BlueGreen
	// Charts says where the ztunnel chart comes from; Values are extra Helm values by chart or
	// release name, merged over blue's values for green.
	Charts steps.ChartSource
	Values map[string]map[string]any
	// Probe names the caller's health probe of the batch health gates; empty means "mesh-health".
	Probe string
	// Waive lists waivable finding codes the caller accepts.
	Waive []plan.Code
	// Releases is the release data of the compatibility gate; nil means releases.Default().
	Releases *releases.Data
	// Today is the date the gate judges end of life at (planners read no clock); zero skips those
	// rules, which an info finding says.
	Today time.Time
}

// BlueGreenZtunnel plans replacing the running ztunnel with a second one on other nodes, as one
// operation (see BlueGreen). It runs the compatibility gate of the mesh as it runs (package compat)
// first, as every primitive does, and its plan opens with the step that re-runs the gate at apply
// time. It is pure: the snapshot is not changed.
//
// The contract is every primitive's (plan.Finalize): bad options and a mesh it cannot work on (no
// ztunnel or two, a chart older than 1.25.1 for green, nodes that do not exist) return an error
// wrapping plan.ErrInvalidOptions and no plan; blocking findings (the gate's, green ahead of the
// control plane, a namespace istiod would not discover, a node already running two ztunnels)
// return the plan with them, no steps, and an error wrapping plan.ErrBlocked; unwaived waivable
// findings leave plan.Runnable false.
func BlueGreenZtunnel(s *mesh.Snapshot, opts BlueGreenOptions) (*plan.Plan, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: snapshot is nil; observe a cluster first (observe.Live, observe.Dir)", plan.ErrInvalidOptions)
	}
	s, err := mesh.Normalized(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", plan.ErrInvalidOptions, err)
	}
	if opts.Target.IsZero() {
		return nil, fmt.Errorf("%w: the green ztunnel's version (Target) is required", plan.ErrInvalidOptions)
	}
	if err := plan.CheckWaivers(opts.Waive); err != nil {
		return nil, err
	}
	if len(s.Ztunnels) != 1 {
		return nil, fmt.Errorf("%w: blue-green needs exactly one running ztunnel, found %d (%v); finish or undo the previous blue-green first",
			plan.ErrInvalidOptions, len(s.Ztunnels), ztunnelNames(s))
	}
	z := s.Ztunnels[0]
	p := plan.New(plan.Metadata{
		Name:        fmt.Sprintf("blue-green ztunnel %s/%s (%s) → %s", z.Namespace, z.Name, z.Version, opts.Target),
		Operation:   "bluegreen-ztunnel",
		Fingerprint: s.Fingerprint(),
		From:        z.Version,
		To:          opts.Target,
		Options:     map[string]string{"target": opts.Target.String(), "ztunnel": NameBlueGreen},
	})
	for k, v := range opts.Strategy.Settings() {
		p.Metadata.Options[k] = v
	}
	// The compatibility gate of the mesh as it runs, the same one the prechecks step re-runs at
	// apply time: a blue-green must not start on a mesh the gate stops.
	gate, err := compat.Compute(s, compat.Options{Releases: opts.Releases, Today: opts.Today, Waive: opts.Waive})
	if err != nil {
		return nil, err
	}
	b := steps.New(p, steps.Options{Charts: opts.Charts, Values: opts.Values, Probe: opts.Probe})
	for _, f := range gate.Findings {
		b.Finding(f)
	}
	b.Add(compat.PrecheckStep("", mesh.Version{}, ""))
	rev := opts.Revision
	if rev == "" {
		rev, _ = s.ZtunnelRevision(z)
	}
	if err := PlanBlueGreen(b, s, BlueGreenStepOptions{Target: opts.Target, Revision: rev, Strategy: opts.Strategy}); err != nil {
		return nil, err
	}
	if err := b.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", plan.ErrInvalidOptions, err)
	}
	return plan.Finalize(p, plan.FinalizeOptions{Waive: opts.Waive})
}

func ztunnelNames(s *mesh.Snapshot) []string {
	var out []string
	for _, z := range s.Ztunnels {
		out = append(out, z.Namespace+"/"+z.Name)
	}
	return out
}

// BlueGreenStepOptions configure PlanBlueGreen.
type BlueGreenStepOptions struct {
	// Target is green's version; Revision the istiod revision green connects to.
	Target   mesh.Version
	Revision string
	// Strategy holds the blue-green options.
	Strategy BlueGreen
	// IDPrefix is put before every step ID (chained hops).
	IDPrefix string
}

// bg is one blue-green being planned.
type bg struct {
	b                  *steps.Builder
	s                  *mesh.Snapshot
	opts               BlueGreenStepOptions
	g                  BlueGreen
	blue               mesh.Ztunnel
	blueRel            mesh.HelmRelease
	label              string
	blueVal, greenVal  string
	greenNS, greenName string
	greenRel           string
	green              mesh.ObjectRef
	base               string
	blueNodes          []mesh.Node // the nodes workloads move off (relabelled ones excluded)
	greenAccount       string
}

// PlanBlueGreen adds the steps of a blue-green ztunnel replacement of the snapshot's one ztunnel to
// a plan being built; BlueGreenZtunnel and ambient.PlanUpgrade (with Ztunnel: BlueGreen{...}) call
// it.
func PlanBlueGreen(b *steps.Builder, s *mesh.Snapshot, opts BlueGreenStepOptions) error {
	if err := opts.Strategy.Validate(); err != nil {
		return err
	}
	if len(s.Ztunnels) != 1 {
		return fmt.Errorf("%w: blue-green needs exactly one running ztunnel, found %d (%v); finish or undo the previous blue-green first",
			plan.ErrInvalidOptions, len(s.Ztunnels), ztunnelNames(s))
	}
	if opts.Target.Less(compat.ResourceNameFixed) {
		return fmt.Errorf("%w: green ztunnel %s cannot run beside the running one: the chart names a second ztunnel (resourceName) only from %s; pick a target of %s or newer, or upgrade node by node",
			plan.ErrInvalidOptions, opts.Target, compat.ResourceNameFixed, compat.ResourceNameFixed)
	}
	x := &bg{b: b, s: s, opts: opts, g: opts.Strategy, blue: s.Ztunnels[0], base: opts.IDPrefix + "ztunnel/bluegreen/"}
	h, ok := b.Release(s, "ztunnel", x.blue.HelmRelease)
	if !ok {
		return fmt.Errorf("%w: ztunnel %s/%s has no Helm release; blue-green pins it to its nodes with a Helm upgrade: adopt it into Helm first, or upgrade node by node",
			plan.ErrInvalidOptions, x.blue.Namespace, x.blue.Name)
	}
	x.blueRel = h
	if err := x.names(); err != nil {
		return err
	}
	if err := x.nodes(); err != nil {
		return err
	}
	x.findings()
	x.labelBlue()
	x.pinBlue()
	x.trust(true)
	x.installGreen()
	x.capacity()
	x.moveWorkloads()
	x.finish()
	return nil
}

// Green returns the green ztunnel as it will run once the blue-green replacement of the snapshot's
// one ztunnel is done (no pods: its nodes do not exist yet), for planners that simulate what comes
// after. It returns the errors PlanBlueGreen returns for the names.
func (g BlueGreen) Green(s *mesh.Snapshot, target mesh.Version, revision string) (mesh.Ztunnel, error) {
	if len(s.Ztunnels) != 1 {
		return mesh.Ztunnel{}, fmt.Errorf("%w: blue-green needs exactly one running ztunnel, found %d (%v)", plan.ErrInvalidOptions, len(s.Ztunnels), ztunnelNames(s))
	}
	x := &bg{s: s, g: g, blue: s.Ztunnels[0]}
	if err := x.names(); err != nil {
		return mesh.Ztunnel{}, err
	}
	z := mesh.Ztunnel{Namespace: x.greenNS, Name: x.greenName, ServiceAccount: x.greenName, Version: target, Image: x.blue.Image,
		Selector: x.blue.Selector, NodeSelector: x.blue.NodeSelector,
		NodeAffinity:   []mesh.NodeSelectorTerm{{MatchExpressions: []mesh.NodeRequirement{{Key: x.label, Operator: "In", Values: []string{x.greenVal}}}}},
		UpdateStrategy: x.blue.UpdateStrategy, TerminationGracePeriodSeconds: x.blue.TerminationGracePeriodSeconds,
		XDSAddress: x.blue.XDSAddress, CAAddress: x.blue.CAAddress, HelmRelease: x.greenRel}
	if revision != "" && revision != "default" {
		z.Revision = revision
	}
	return z, nil
}

// names derives the colours and green's names and checks they cannot collide with blue's.
func (x *bg) names() error {
	g := x.g
	x.label = steps.OrDefault(g.Label, DefaultColourLabel)
	x.blueVal, x.greenVal = g.BlueValue, g.GreenValue
	if x.blueVal == "" || x.greenVal == "" {
		blue, green := "blue", "green"
		for _, p := range x.blue.Pods {
			if n, ok := x.s.Node(p.Node); ok && n.Labels[x.label] == "green" {
				blue, green = "green", "blue" // the previous blue-green's green is this one's blue
				break
			}
		}
		x.blueVal, x.greenVal = steps.OrDefault(x.blueVal, blue), steps.OrDefault(x.greenVal, green)
	}
	if x.blueVal == x.greenVal {
		return fmt.Errorf("%w: blue and green label values are both %q", plan.ErrInvalidOptions, x.blueVal)
	}
	x.greenNS = steps.OrDefault(g.Namespace, "ztunnel-"+x.greenVal)
	x.greenName = steps.OrDefault(g.ResourceName, "ztunnel-"+x.greenVal)
	x.greenRel = steps.OrDefault(g.Release, x.greenName)
	switch {
	case x.greenNS == x.blue.Namespace:
		// The chart's DaemonSet selector is always app: ztunnel (templates/daemonset.yaml): two in one
		// namespace adopt each other's pods.
		return fmt.Errorf("%w: green would run in namespace %s beside ztunnel %s; the chart always selects app=ztunnel, so the two would adopt each other's pods: pick another namespace",
			plan.ErrInvalidOptions, x.greenNS, x.blue.Name)
	case x.greenName == x.blue.Name || x.greenName == x.blue.ServiceAccount:
		// resourceName names the ClusterRole and ClusterRoleBinding too (templates/rbac.yaml): cluster-wide.
		return fmt.Errorf("%w: green's resourceName %q is blue's; it names the cluster-scoped ClusterRole and ClusterRoleBinding too: pick another",
			plan.ErrInvalidOptions, x.greenName)
	}
	for _, h := range x.s.HelmReleases {
		if h.Namespace == x.greenNS && h.Name == x.greenRel {
			return fmt.Errorf("%w: Helm release %s/%s already exists; a previous blue-green left it: remove it or pick another release name", plan.ErrInvalidOptions, x.greenNS, x.greenRel)
		}
	}
	x.green = mesh.ObjectRef{Kind: "DaemonSet", Namespace: x.greenNS, Name: x.greenName}
	x.greenAccount = x.greenNS + "/" + x.greenName
	return nil
}

// nodes finds the blue nodes and checks the capacity options against the snapshot.
func (x *bg) nodes() error {
	relabel := map[string]bool{}
	for _, n := range x.g.Capacity.Relabel {
		relabel[n] = true
	}
	seen := map[string]bool{}
	for _, p := range x.blue.Pods {
		if seen[p.Node] {
			continue
		}
		seen[p.Node] = true
		n, ok := x.s.Node(p.Node)
		if !ok {
			continue // the pod's node is gone already
		}
		if n.Labels[x.label] == x.greenVal {
			return fmt.Errorf("%w: node %s runs ztunnel %s/%s but is already labelled %s=%s; pinning blue would take its ztunnel away: remove the label or pick other colour values",
				plan.ErrInvalidOptions, n.Name, x.blue.Namespace, x.blue.Name, x.label, x.greenVal)
		}
		if !relabel[n.Name] {
			x.blueNodes = append(x.blueNodes, n)
		}
	}
	for _, name := range x.g.Capacity.Relabel {
		if !seen[name] {
			return fmt.Errorf("%w: node %s to relabel green does not run ztunnel %s/%s (nodes that do: %d)", plan.ErrInvalidOptions, name, x.blue.Namespace, x.blue.Name, len(seen))
		}
	}
	if len(x.blueNodes)+len(x.g.Capacity.Relabel) == 0 {
		return fmt.Errorf("%w: ztunnel %s/%s runs on no node of the snapshot; nothing to move", plan.ErrInvalidOptions, x.blue.Namespace, x.blue.Name)
	}
	if len(x.blueNodes) == 0 && len(x.g.Capacity.Relabel) > 0 {
		return fmt.Errorf("%w: relabelling every node green leaves no node to move workloads off; relabel some and let the others go", plan.ErrInvalidOptions)
	}
	pools := x.g.Capacity.NodePools
	if x.g.ScaleDownNodePool != "" {
		pools = append(append([]string(nil), pools...), x.g.ScaleDownNodePool)
	}
	if len(pools) > 0 && steps.Contains(x.s.Observation.Skipped, "karpenter.sh/NodePool") {
		return fmt.Errorf("%w: the options name NodePool %q, but the cluster does not serve karpenter.sh/v1 NodePools (is Karpenter installed?); relabel nodes or add green nodes yourself",
			plan.ErrInvalidOptions, pools[0])
	}
	for _, np := range pools {
		if _, ok := x.s.NodePool(np); !ok {
			names := []string{}
			for _, p := range x.s.NodePools {
				names = append(names, p.Name)
			}
			return fmt.Errorf("%w: NodePool %q does not exist (NodePools: %v); check the name with kubectl get nodepools.karpenter.sh", plan.ErrInvalidOptions, np, names)
		}
	}
	return nil
}

func (x *bg) chartVersion(h mesh.HelmRelease, fallback mesh.Version) mesh.Version {
	if v, err := mesh.ParseVersion(h.ChartVersion); err == nil {
		return v
	}
	return fallback
}

// findings adds what a reviewer must know before anything moves.
func (x *bg) findings() {
	b, s := x.b, x.s
	comp := "ztunnel/" + x.blue.Namespace + "/" + x.blue.Name
	if r, ok := s.Revision(x.opts.Revision); ok && !r.Version.IsZero() {
		switch d := r.Version.MinorsAhead(x.opts.Target); {
		case d < 0:
			b.Finding(plan.Finding{Code: plan.CodeZtunnelAhead, Severity: plan.Blocking, Object: x.green, Component: comp,
				Message: fmt.Sprintf("green ztunnel %s would be newer than istiod %q (%s) it connects to; ztunnel 1.x needs control plane 1.x or 1.x+1", x.opts.Target, r.Name, r.Version),
				Remedy:  "upgrade the control plane first (ambient.PlanUpgrade with the blue-green ztunnel strategy does both)"})
		case d > 1:
			b.Finding(plan.Finding{Code: plan.CodeZtunnelBehind, Severity: plan.Blocking, Object: x.green, Component: comp,
				Message: fmt.Sprintf("green ztunnel %s would be %d minors behind istiod %q (%s)", x.opts.Target, d, r.Name, r.Version),
				Remedy:  "pick a green version within one minor of the control plane"})
		}
	}
	blueChart := x.chartVersion(x.blueRel, x.blue.Version)
	if blueChart.Less(updateStrategyValue) {
		b.Finding(plan.Finding{Code: plan.CodeBlueGreenPinRestarts, Severity: plan.Waivable, Object: x.blue.Ref(), Component: comp,
			Message: fmt.Sprintf("ztunnel %s runs chart %s, which has no updateStrategy value (from %s): pinning it to its nodes changes its template and restarts it once on every node, resetting long-lived connections",
				x.blue.Name, blueChart, updateStrategyValue.MinorString()),
			Remedy: "waive to accept one restart in a quiet window, or upgrade ztunnel to 1.26+ in place first"})
	}
	x.discovery()
	x.connectionReport()
	for _, np := range x.g.Capacity.NodePools {
		if len(x.heldNodes(np)) > 0 {
			// Karpenter hashes spec.template (labels included) into each NodeClaim and replaces the ones
			// whose hash differs (kubernetes-sigs/karpenter@v1: pkg/apis/v1/nodepool.go, NodePool.Hash).
			b.Finding(plan.Finding{Code: plan.CodeBlueGreenDrift, Severity: plan.Info, Object: mesh.ObjectRef{Kind: "NodePool", Name: np},
				Message: fmt.Sprintf("NodePool %s launched %d of the blue nodes: labelling its template green makes Karpenter see them as drifted and replace them on its own schedule", np, len(x.heldNodes(np))),
				Remedy:  "the plan annotates those nodes karpenter.sh/do-not-disrupt=true while it moves workloads and removes the annotation at the end, so Karpenter consolidates them once they are empty"})
		}
	}
	if len(x.g.Capacity.NodePools) > 0 {
		for _, p := range x.s.NodePools {
			if steps.Contains(x.g.Capacity.NodePools, p.Name) || p.Labels[x.label] == x.greenVal || x.g.ScaleDownNodePool == p.Name {
				continue
			}
			b.Finding(plan.Finding{Code: plan.CodeBlueGreenPoolNotGreen, Severity: plan.Waivable, Object: mesh.ObjectRef{Kind: "NodePool", Name: p.Name},
				Message: fmt.Sprintf("NodePool %s stays uncoloured: the nodes it launches run the blue ztunnel, and workloads evicted onto them keep blue from being removed", p.Name),
				Remedy:  "add it to the green NodePools, or waive if no moved workload can land on it (its requirements or taints keep them off)"})
		}
	}
}

// heldNodes are the blue nodes a green NodePool launched, which its new label makes drifted.
func (x *bg) heldNodes(np string) []mesh.ObjectRef {
	var out []mesh.ObjectRef
	for _, n := range x.blueNodes {
		if n.Labels[labelNodePool] == np {
			out = append(out, nodeObject(n.Name))
		}
	}
	return out
}

// labelNodePool is the label Karpenter puts on the nodes of a NodePool.
const labelNodePool = "karpenter.sh/nodepool"

// discovery checks that istiod would discover green's namespace: with meshConfig.discoverySelectors
// set, istiod only watches matching namespaces and writes istio-ca-root-cert nowhere else (istio/istio
// @1.30.3: pilot/pkg/serviceregistry/kube/controller/namespacecontroller.go filters namespaces and
// ConfigMaps with kubeClient.ObjectFilter(), the discovery-selector filter). The plan creates the
// namespace with labels that match the first selector it can satisfy.
func (x *bg) discovery() {
	for _, h := range x.istiodReleases() {
		mc, _ := h.Values["meshConfig"].(map[string]any)
		sels, _ := mc["discoverySelectors"].([]any)
		if len(sels) == 0 {
			continue
		}
		if _, ok := labelsSatisfying(sels); !ok {
			x.b.Finding(plan.Finding{Code: plan.CodeBlueGreenNotDiscovered, Severity: plan.Blocking,
				Object:  mesh.ObjectRef{Kind: "Namespace", Name: x.greenNS},
				Message: fmt.Sprintf("istiod release %s/%s sets meshConfig.discoverySelectors that no labels of a new namespace can satisfy; istiod would not see green's namespace %s (no istio-ca-root-cert there, its pods not authorized)", h.Namespace, h.Name, x.greenNS),
				Remedy:  "add a selector matching a label the plan can set (matchLabels, or In/Exists expressions), or label the namespace yourself and pass it as Namespace"})
		}
	}
}

// namespaceLabels are the labels green's namespace gets so every istiod's discoverySelectors
// select it.
func (x *bg) namespaceLabels() map[string]string {
	out := map[string]string{}
	for _, h := range x.istiodReleases() {
		mc, _ := h.Values["meshConfig"].(map[string]any)
		sels, _ := mc["discoverySelectors"].([]any)
		if l, ok := labelsSatisfying(sels); ok {
			for k, v := range l {
				out[k] = v
			}
		}
	}
	return out
}

// labelsSatisfying returns labels that make a namespace match one of the selectors (ORed, as
// discoverySelectors are): the first whose matchLabels and In/Exists expressions a label set can
// satisfy. With no selectors, no label is needed.
func labelsSatisfying(sels []any) (map[string]string, bool) {
	if len(sels) == 0 {
		return nil, true
	}
next:
	for _, raw := range sels {
		sel, _ := raw.(map[string]any)
		out := map[string]string{}
		if ml, ok := sel["matchLabels"].(map[string]any); ok {
			for k, v := range ml {
				s, _ := v.(string)
				out[k] = s
			}
		}
		exprs, _ := sel["matchExpressions"].([]any)
		for _, e := range exprs {
			em, _ := e.(map[string]any)
			key, _ := em["key"].(string)
			values, _ := em["values"].([]any)
			switch em["operator"] {
			case "In":
				if len(values) == 0 {
					continue next
				}
				v, _ := values[0].(string)
				if cur, set := out[key]; set && cur != v {
					continue next
				}
				out[key] = v
			case "Exists":
				if _, set := out[key]; !set {
					out[key] = "true"
				}
			case "NotIn", "DoesNotExist":
				if _, set := out[key]; set && em["operator"] == "DoesNotExist" {
					continue next
				}
			default:
				continue next
			}
		}
		return out, true
	}
	return nil, false
}

// connectionReport adds one finding for the blue nodes whose pods hold long-lived connections a
// drain ends (StatefulSets and Jobs): how many, the longest grace period and where, an example, and
// which of them goes last. Each node's own list is in the runbook's table of waves (what may hold
// a drain); one finding per node would be a thousand findings on a large mesh.
func (x *bg) connectionReport() {
	ix := steps.NewIndex(x.s)
	order := x.order(ix)
	var nodes []mesh.ObjectRef
	var example, longestOn, lastOn string
	longest := int64(0)
	for i, n := range order {
		var held []string
		nodeLongest := int64(0)
		for _, w := range ix.On(n.Name) {
			if w.Kind != "StatefulSet" && w.Kind != "Job" && w.Kind != "CronJob" {
				continue
			}
			g := w.TerminationGracePeriodSeconds
			if g == 0 {
				g = 30
			}
			nodeLongest = max(nodeLongest, g)
			held = append(held, fmt.Sprintf("%s (grace %ds)", w.Ref(), g))
		}
		if len(held) == 0 {
			continue
		}
		sort.Strings(held)
		nodes = append(nodes, mesh.ObjectRef{Kind: "Node", Name: n.Name})
		if example == "" {
			example = fmt.Sprintf("node %s runs %s", n.Name, strings.Join(held, ", "))
		}
		if nodeLongest > longest {
			longest, longestOn = nodeLongest, n.Name
		}
		if i == len(order)-1 {
			lastOn = n.Name
		}
	}
	if len(nodes) == 0 {
		return
	}
	details := map[string]string{"nodes": strconv.Itoa(len(nodes)), "longestGraceSeconds": strconv.FormatInt(longest, 10), "longestOn": longestOn}
	msg := fmt.Sprintf("%d blue %s run StatefulSets or Jobs whose connections end when the node is drained, after up to %ds of grace (on %s); e.g. %s",
		len(nodes), map[bool]string{true: "node", false: "nodes"}[len(nodes) == 1], longest, longestOn, example)
	if lastOn != "" {
		details["drainedLast"] = lastOn
		msg += fmt.Sprintf("; %s is drained last", lastOn)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	x.b.Finding(plan.Finding{Code: plan.CodeBlueGreenLongLived, Severity: plan.Info, Object: x.blue.Ref(), Related: nodes, Details: details,
		Message: msg, Remedy: "make sure their clients reconnect; Jobs are waited for unless the plan evicts them"})
}

// order sorts the blue nodes as workloads should move: nodes with only stateless workloads first,
// then those with PodDisruptionBudget-bound or stateful workloads, then those running Jobs; within a
// group by pool and name.
func (x *bg) order(ix *steps.Index) []mesh.Node {
	rank := func(n mesh.Node) int {
		r := 0
		for _, w := range ix.On(n.Name) {
			switch {
			case w.Kind == "Job" || w.Kind == "CronJob":
				return 2
			case w.Kind == "StatefulSet" || w.LocalStorage || len(x.s.BudgetsFor(*w)) > 0:
				r = 1
			}
		}
		return r
	}
	out := append([]mesh.Node(nil), x.blueNodes...)
	sort.SliceStable(out, func(i, j int) bool {
		a, c := rank(out[i]), rank(out[j])
		if a != c {
			return a < c
		}
		if out[i].Pool != out[j].Pool {
			return out[i].Pool < out[j].Pool
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func nodeObject(name string) mesh.ObjectRef { return mesh.ObjectRef{Kind: "Node", Name: name} }

func (x *bg) labelStep(id, node string, set map[string]string, remove []string, desc string) plan.Step {
	st := plan.Step{ID: id, Description: desc, Risk: plan.RiskLow,
		PatchLabels: &plan.PatchLabels{APIVersion: "v1", Object: nodeObject(node), Set: set, Remove: remove}}
	undo := &plan.PatchLabels{APIVersion: "v1", Object: nodeObject(node)}
	for k := range set {
		undo.Remove = append(undo.Remove, k)
	}
	sort.Strings(undo.Remove)
	if len(undo.Remove) > 0 {
		st.Rollback = &plan.Step{ID: id + "/undo", Description: "remove label " + strings.Join(undo.Remove, ", ") + " from " + node, Risk: plan.RiskLow, PatchLabels: undo}
	}
	return st
}

// labelBlue labels every node blue runs on with the blue colour, in one step. Blue's affinity
// excludes green rather than requiring blue, so a node that joins unlabelled keeps a ztunnel.
func (x *bg) labelBlue() {
	var objs []mesh.ObjectRef
	for _, n := range append(append([]mesh.Node(nil), x.blueNodes...), x.relabelNodes()...) {
		if n.Labels[x.label] != x.blueVal {
			objs = append(objs, nodeObject(n.Name))
		}
	}
	if len(objs) == 0 {
		return
	}
	id := x.base + "label-blue"
	set := map[string]string{x.label: x.blueVal}
	x.b.Add(plan.Step{ID: id, Description: fmt.Sprintf("label the %d node(s) blue runs on %s=%s", len(objs), x.label, x.blueVal), Risk: plan.RiskLow,
		Reason:      "the colours are visible on every node (kubectl get nodes -L " + x.label + ") before anything moves",
		PatchLabels: &plan.PatchLabels{APIVersion: "v1", Objects: objs, Set: set},
		Rollback: &plan.Step{ID: id + "/undo", Description: "remove label " + x.label + " from those nodes", Risk: plan.RiskLow,
			PatchLabels: &plan.PatchLabels{APIVersion: "v1", Objects: objs, Remove: []string{x.label}}}})
}

func (x *bg) relabelNodes() []mesh.Node {
	var out []mesh.Node
	for _, name := range x.g.Capacity.Relabel {
		n, _ := x.s.Node(name)
		out = append(out, n)
	}
	return out
}

// affinity returns the chart's affinity value with a required node affinity expression added to
// every node selector term of the release's own (terms are ORed, expressions within one ANDed), or a
// new one.
func affinity(current any, expr map[string]any) map[string]any {
	out := map[string]any{}
	if m, ok := current.(map[string]any); ok {
		steps.Merge(out, m)
	}
	na, _ := out["nodeAffinity"].(map[string]any)
	if na == nil {
		na = map[string]any{}
		out["nodeAffinity"] = na
	}
	req, _ := na["requiredDuringSchedulingIgnoredDuringExecution"].(map[string]any)
	if req == nil {
		req = map[string]any{}
		na["requiredDuringSchedulingIgnoredDuringExecution"] = req
	}
	terms, _ := req["nodeSelectorTerms"].([]any)
	if len(terms) == 0 {
		terms = []any{map[string]any{}}
	}
	var withExpr []any
	for _, t := range terms {
		tm := map[string]any{}
		if m, ok := t.(map[string]any); ok {
			steps.Merge(tm, m)
		}
		exprs, _ := tm["matchExpressions"].([]any)
		tm["matchExpressions"] = append(append([]any(nil), exprs...), expr)
		withExpr = append(withExpr, tm)
	}
	req["nodeSelectorTerms"] = withExpr
	return out
}

// pinBlue keeps blue on the non-green nodes: a required node affinity that excludes green (and
// nodes being switched), under updateStrategy OnDelete so the template change restarts no pod. The
// DaemonSet controller removes a pod only from a node that stops matching (pkg/controller/daemon),
// whatever the strategy; no blue node does here.
func (x *bg) pinBlue() {
	h := x.blueRel
	v := x.chartVersion(h, x.blue.Version)
	set := map[string]any{
		"affinity": affinity(h.Values["affinity"], map[string]any{"key": x.label, "operator": "NotIn", "values": []any{x.greenVal, switchingValue}}),
	}
	if !v.Less(updateStrategyValue) {
		set["updateStrategy"] = map[string]any{"type": "OnDelete", "rollingUpdate": nil}
	}
	if !v.Less(resourceNameSince) {
		set["resourceName"] = x.blue.Name // pinned: a default that changed across versions must not rename it (see ChartNames)
	}
	st := x.b.Upgrade(x.base+"pin-blue", fmt.Sprintf("pin ztunnel %s to the nodes that are not %s=%s (node affinity, updateStrategy OnDelete)", x.blue.Name, x.label, x.greenVal),
		"blue must stay off green nodes before green exists: two ztunnels on one node split its pods' traffic (istio-cni hands new pods to the newest)",
		h, v, set, plan.RiskMedium,
		plan.NewCheck(x.blue.Ref(), plan.NodeAgentReadyArgs{All: true, Version: x.blue.Version.String()},
			fmt.Sprintf("every blue node still runs a ready ztunnel %s (none restarted)", x.blue.Version)))
	if v.Less(affinityValue) {
		st.Blocked = fmt.Sprintf("ztunnel chart %s does not read the affinity value (from %s); upgrade ztunnel in place first", v, affinityValue.MinorString())
	}
	x.b.Add(st)
}

// istiodReleases are the istiod releases as the plan leaves them so far (a revision installed
// earlier in the plan included).
func (x *bg) istiodReleases() []mesh.HelmRelease {
	return x.b.Releases(x.s, "istiod")
}

// trustOf returns the ztunnel accounts an istiod release trusts: its values' CA_TRUSTED_NODE_ACCOUNTS
// when set (the chart renders a user value instead of its own, istio/istio@1.30.3:
// manifests/charts/istio-control/istio-discovery/templates/deployment.yaml), else what the running
// revision trusts, else the chart's default <trustedZtunnelNamespace or release namespace>/<trustedZtunnelName or ztunnel>.
func (x *bg) trustOf(h mesh.HelmRelease) []string {
	env := h.Values
	for _, k := range strings.Split(compat.TrustEnvKey(h, mesh.Version{}), ".") {
		env, _ = env[k].(map[string]any)
	}
	if t, ok := env["CA_TRUSTED_NODE_ACCOUNTS"].(string); ok {
		return splitTrust(t)
	}
	for _, r := range x.s.Revisions {
		if r.HelmRelease == h.Name && r.Namespace == h.Namespace && !r.TrustedAccountsUnknown {
			return append([]string(nil), r.TrustedZtunnelAccounts...)
		}
	}
	ns, _ := h.Values["trustedZtunnelNamespace"].(string)
	name, _ := h.Values["trustedZtunnelName"].(string)
	return []string{steps.OrDefault(ns, h.Namespace) + "/" + steps.OrDefault(name, "ztunnel")}
}

// splitTrust splits a trust list as istiod does: on commas, entries without "/" dropped, nothing
// trimmed (istio/istio@1.30.3: pilot/pkg/features/security.go).
func splitTrust(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if strings.Contains(a, "/") {
			out = append(out, a)
		}
	}
	return out
}

// trust has every istiod trust both ztunnels (both=true, before green starts) or, at the end, green
// instead of blue: one comma list in env.CA_TRUSTED_NODE_ACCOUNTS, since trustedZtunnelName holds one
// account only.
func (x *bg) trust(both bool) {
	for _, h := range x.istiodReleases() {
		cur := x.trustOf(h)
		var want []string
		for _, a := range cur {
			if both || a != x.blue.Account() {
				want = append(want, a)
			}
		}
		if both && !steps.Contains(want, x.blue.Account()) {
			want = append(want, x.blue.Account())
		}
		if !steps.Contains(want, x.greenAccount) {
			want = append(want, x.greenAccount)
		}
		sort.Strings(want)
		if equalSets(cur, want) {
			continue
		}
		rev := revisionOf(x.s, h)
		id, desc, reason := x.base+"trust/"+h.Name, fmt.Sprintf("make istiod %s trust both ztunnels: %s", h.Name, strings.Join(want, ",")),
			"green's certificate requests for its pods are refused unless istiod trusts its service account; blue must stay trusted while it runs"
		if !both {
			id, desc, reason = x.base+"trust-green-only/"+h.Name, fmt.Sprintf("make istiod %s trust green instead of blue: %s", h.Name, strings.Join(want, ",")),
				"blue is gone; istiod trusts no more accounts than run"
		}
		v := x.chartVersion(h, mesh.Version{})
		checks := []plan.Check{plan.NewCheck(mesh.ObjectRef{}, plan.TrustedAccountsArgs{Accounts: want, Revision: rev, Only: true},
			fmt.Sprintf("istiod %s trusts exactly %s", rev, strings.Join(want, ",")))}
		if r, ok := x.s.Revision(rev); ok {
			checks = append(checks, steps.DeploymentReady(r.Namespace, r.Deployment))
		}
		set := compat.EnvValues(compat.TrustEnvKey(h, v), "CA_TRUSTED_NODE_ACCOUNTS", strings.Join(want, ","))
		x.b.Add(x.b.Upgrade(id, desc, reason, h, v, set, plan.RiskMedium, checks...))
	}
}

func revisionOf(s *mesh.Snapshot, h mesh.HelmRelease) string {
	for _, r := range s.Revisions {
		if r.HelmRelease == h.Name && r.Namespace == h.Namespace {
			return r.Name
		}
	}
	if rev, _ := h.Values["revision"].(string); rev != "" {
		return rev
	}
	return "default"
}

func equalSets(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !steps.Contains(b, x) {
			return false
		}
	}
	return true
}

// greenValues are blue's values with green's identity and placement: the same mesh settings
// (profile, variant, global cluster and network, env, proxy metadata, trust bundle, network policy,
// resource quotas, node selector, update strategy), its own resourceName and revision, and blue's
// required node affinity narrowed to green nodes. Explicit xdsAddress and caAddress are dropped when
// green connects to another revision than blue, so the chart derives them from the revision
// (istio/istio@1.30.3: manifests/charts/ztunnel/templates/daemonset.yaml, XDS_ADDRESS and CA_ADDRESS).
func (x *bg) greenValues() (map[string]any, []string) {
	out := map[string]any{}
	steps.Merge(out, x.blueRel.Values)
	delete(out, "resourceName")
	delete(out, "revision")
	out["resourceName"] = x.greenName
	if x.opts.Revision != "" && x.opts.Revision != "default" {
		out["revision"] = x.opts.Revision
	}
	var notes []string
	blueRev, _ := x.blueRel.Values["revision"].(string)
	if x.opts.Revision != "" && steps.OrDefault(blueRev, "default") != x.opts.Revision {
		for _, k := range []string{"xdsAddress", "caAddress"} {
			if v, ok := out[k]; ok {
				delete(out, k)
				notes = append(notes, fmt.Sprintf("blue's %s %v is not copied: green connects to revision %s, whose address the chart derives", k, v, x.opts.Revision))
			}
		}
	}
	if r, ok := x.s.Revision(x.opts.Revision); ok {
		out["istioNamespace"] = r.Namespace
	}
	out["affinity"] = affinity(x.blueRel.Values["affinity"], map[string]any{"key": x.label, "operator": "In", "values": []any{x.greenVal}})
	return out, notes
}

// installGreen creates green's namespace and installs green there.
func (x *bg) installGreen() {
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": x.greenNS}}
	if l := x.namespaceLabels(); len(l) > 0 {
		labels := map[string]any{}
		for k, v := range l {
			labels[k] = v
		}
		ns["metadata"].(map[string]any)["labels"] = labels
	}
	st := plan.Step{ID: x.base + "namespace", Description: "create namespace " + x.greenNS + " for the green ztunnel",
		Reason: "a second ztunnel needs its own namespace: the chart's DaemonSet always selects app=ztunnel", Risk: plan.RiskLow,
		ApplyObject: &plan.ApplyObject{Object: ns}}
	if _, exists := x.s.Namespace(x.greenNS); !exists {
		st.Rollback = &plan.Step{ID: st.ID + "/undo", Description: "delete the namespace the plan created (green is not installed yet)", Risk: plan.RiskLow,
			DeleteObject: &plan.DeleteObject{APIVersion: "v1", Object: mesh.ObjectRef{Kind: "Namespace", Name: x.greenNS}}}
	}
	x.b.Add(st)
	green, notes := x.greenValues()
	values := x.b.Values(green, "ztunnel", x.greenRel, nil)
	x.b.Track(mesh.HelmRelease{Name: x.greenRel, Namespace: x.greenNS, Chart: "ztunnel", ChartVersion: x.opts.Target.String(),
		AppVersion: x.opts.Target.String(), Revision: 1, Status: "deployed", Values: values})
	id := x.base + "install-green"
	x.b.Add(plan.Step{ID: id, Description: fmt.Sprintf("install the green ztunnel %s (%s) in %s, on nodes labelled %s=%s only", x.greenName, x.opts.Target, x.greenNS, x.label, x.greenVal),
		Reason: "green runs only where no blue does; no green node exists yet, so nothing changes for running pods", Risk: plan.RiskLow,
		HelmInstall: &plan.HelmRelease{Release: x.greenRel, Namespace: x.greenNS, Chart: x.b.Chart("ztunnel", x.opts.Target), Values: values},
		Postconditions: []plan.Check{steps.ReleaseCheck(mesh.HelmRelease{Name: x.greenRel, Namespace: x.greenNS}, x.opts.Target),
			plan.NewCheck(x.blue.Ref(), plan.NodeAgentReadyArgs{All: true, Version: x.blue.Version.String()}, "every blue node still runs a ready blue ztunnel")},
		Notes: notes,
		Rollback: &plan.Step{ID: id + "/undo", Description: "uninstall the green ztunnel (no pod uses it yet)", Risk: plan.RiskLow,
			HelmUninstall: &plan.HelmUninstall{Release: x.greenRel, Namespace: x.greenNS}}})
}

// capacity brings green nodes, waits for them when it must, and waits until green runs ready on
// every green node there is.
func (x *bg) capacity() {
	c := x.g.Capacity
	sel := x.label + "=" + x.greenVal
	want := c.Nodes
	switch {
	case len(c.NodePools) > 0:
		x.hold()
		for _, np := range c.NodePools {
			x.nodePool(np)
		}
	case len(c.Relabel) > 0:
		want = max(len(c.Relabel), c.Nodes)
		for _, n := range c.Relabel {
			x.relabel(n)
		}
	default:
		want = max(1, c.Nodes)
	}
	if want > 0 {
		x.b.Add(plan.Step{ID: x.base + "green-capacity", Description: fmt.Sprintf("wait for %d ready node(s) labelled %s", want, sel),
			Reason: "workloads move only once green nodes can take them", Risk: plan.RiskNone,
			WaitFor: &plan.WaitFor{TimeoutSeconds: 1800, Check: plan.NewCheck(mesh.ObjectRef{}, plan.NodesReadyArgs{Selector: sel, Min: want},
				fmt.Sprintf("at least %d ready node(s) carry %s", want, sel))}})
	}
	x.b.Add(plan.Step{ID: x.base + "green-ready", Description: fmt.Sprintf("wait until a ready green ztunnel %s runs on every green node", x.opts.Target), Risk: plan.RiskNone,
		WaitFor: &plan.WaitFor{TimeoutSeconds: 600, Check: plan.NewCheck(x.green, plan.NodeAgentReadyArgs{All: true, Version: x.opts.Target.String()},
			fmt.Sprintf("every node labelled %s runs a ready %s pod at %s", sel, x.greenName, x.opts.Target))}})
}

// hold keeps Karpenter from replacing the blue nodes the green NodePools launched: their new template
// label makes them drifted. One step annotates them all.
func (x *bg) hold() {
	var objs []mesh.ObjectRef
	for _, np := range x.g.Capacity.NodePools {
		objs = append(objs, x.heldNodes(np)...)
	}
	if len(objs) == 0 {
		return
	}
	id := x.base + "hold"
	x.b.Add(plan.Step{ID: id, Description: fmt.Sprintf("keep Karpenter from replacing %d blue node(s) as drifted while workloads move", len(objs)), Risk: plan.RiskLow,
		Reason:   "the nodes are drained by the plan, in its order, not by Karpenter at once",
		Annotate: &plan.Annotate{APIVersion: "v1", Objects: objs, Set: map[string]string{annotationDoNotDisrupt: "true"}},
		Rollback: &plan.Step{ID: id + "/undo", Description: "let Karpenter disrupt those nodes again", Risk: plan.RiskLow,
			Annotate: &plan.Annotate{APIVersion: "v1", Objects: objs, Remove: []string{annotationDoNotDisrupt}}}})
}

// nodePool labels a NodePool's template green: Karpenter gives the template's labels to every node
// it launches.
func (x *bg) nodePool(name string) {
	p, _ := x.s.NodePool(name)
	obj := func(labels map[string]any) map[string]any {
		return map[string]any{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"labels": labels}}}}
	}
	undo := map[string]any{}
	if old, ok := p.Labels[x.label]; ok {
		undo[x.label] = old
	}
	id := x.base + "nodepool/" + name
	x.b.Add(plan.Step{ID: id, Description: fmt.Sprintf("label the nodes NodePool %s launches from now on %s=%s", name, x.label, x.greenVal),
		Reason: "new capacity is green: the pods the drains evict land on nodes that run green only", Risk: plan.RiskMedium,
		ApplyObject: &plan.ApplyObject{Object: obj(map[string]any{x.label: x.greenVal})},
		Rollback: &plan.Step{ID: id + "/undo", Description: fmt.Sprintf("give NodePool %s's template its %s label back as it was", name, x.label), Risk: plan.RiskMedium,
			ApplyObject: &plan.ApplyObject{Object: obj(undo)}}})
}

// relabel switches one existing node from blue to green without two ztunnels on it at any moment:
// cordon, drain, label it "switching" (blue leaves, green does not come yet), wait until blue's pod
// is gone, label it green, wait for green, uncordon.
func (x *bg) relabel(name string) {
	n, _ := x.s.Node(name)
	id := x.base + "relabel/" + name + "/"
	x.b.Add(steps.CordonStep(id+"cordon", n))
	ix := steps.NewIndex(x.s)
	d := x.b.DrainOrder(x.s, ix, []mesh.Node{n}, x.s.AmbientNodes())[0]
	d.Ambient = true // every pod leaves a node whose ztunnel is switched
	x.b.Add(steps.DrainStep(id+"drain", d, x.drainSeconds(), "the node's ztunnel is switched: no pod may use it meanwhile"))
	x.b.Add(x.labelStep(id+"switching", name, map[string]string{x.label: switchingValue}, nil,
		fmt.Sprintf("label %s %s=%s: blue leaves it, green does not come yet", name, x.label, switchingValue)))
	x.b.Add(plan.Step{ID: id + "blue-gone", Description: "wait until blue's ztunnel pod is gone from " + name, Risk: plan.RiskNone,
		WaitFor: &plan.WaitFor{TimeoutSeconds: 300, Check: plan.NewCheck(x.blue.Ref(), plan.NodeAgentAbsentArgs{Node: name}, "no blue ztunnel pod is left on "+name)}})
	x.b.Add(x.labelStep(id+"green", name, map[string]string{x.label: x.greenVal}, nil, fmt.Sprintf("label %s %s=%s", name, x.label, x.greenVal)))
	x.b.Add(plan.Step{ID: id + "green-ready", Description: "wait until green's ztunnel is ready on " + name, Risk: plan.RiskNone,
		WaitFor: &plan.WaitFor{TimeoutSeconds: 300, Check: plan.NewCheck(x.green, plan.NodeAgentReadyArgs{Node: name, Version: x.opts.Target.String()},
			fmt.Sprintf("a ready green ztunnel %s runs on %s", x.opts.Target, name))}})
	x.b.Add(steps.UncordonStep(id+"uncordon", name))
}

func (x *bg) drainSeconds() int64 {
	if x.g.DrainTimeout > 0 {
		return int64(x.g.DrainTimeout.Seconds())
	}
	return int64(DefaultDrainTimeout.Seconds())
}

// moveWorkloads cordons every blue node, so evicted pods land on green nodes only, then drains them
// in batches, stateless first, with a health gate after each batch.
func (x *bg) moveWorkloads() {
	ix := steps.NewIndex(x.s)
	order := x.order(ix)
	for _, n := range order {
		if n.Unschedulable {
			continue
		}
		x.b.Add(steps.CordonStep(x.base+"cordon/"+n.Name, n))
	}
	ambient := x.s.AmbientNodes()
	drains := map[string]steps.DrainNode{}
	for _, d := range x.b.DrainOrder(x.s, ix, order, ambient) {
		drains[d.Node.Name] = d
	}
	batch := max(1, x.g.BatchSize)
	pace := int64(30)
	if x.g.Pace > 0 {
		pace = int64(x.g.Pace.Seconds())
	}
	asked := x.g.LocalStorage == LocalStorageEvict
	before := []string{x.b.Last()}
	for start := 0; start < len(order); start += batch {
		end := min(start+batch, len(order))
		var local []string
		for _, n := range order[start:end] {
			for _, w := range ix.On(n.Name) {
				if w.LocalStorage && w.Kind != "DaemonSet" {
					local = append(local, w.Ref().String()+" on "+n.Name)
				}
			}
		}
		if len(local) > 0 && !asked {
			sort.Strings(local)
			x.b.Finding(plan.Finding{Code: plan.CodeBlueGreenLocalStorage, Severity: plan.Info, Object: x.blue.Ref(),
				Message: "draining the blue nodes loses the emptyDir data of " + strings.Join(local, ", "),
				Remedy:  "the plan asks for approval before the first such drain (LocalStorage: evict drains without asking)"})
			st := plan.Step{ID: fmt.Sprintf("%sbatch/%d/approve-local-storage", x.base, start/batch+1), Risk: plan.RiskNone,
				Description: "approve losing the emptyDir data of the pods the next drains evict",
				Approval:    &plan.Approval{Message: "these pods lose their emptyDir data when their node is drained: " + strings.Join(local, ", ")}}
			x.b.Add(st, before...)
			before = []string{st.ID}
			asked = true
		}
		var done []string
		for _, n := range order[start:end] {
			d := drains[n.Name]
			d.Ambient = true // workloads leave blue nodes entirely
			st := steps.DrainStep(x.base+"drain/"+n.Name, d, x.drainSeconds(), "move the node's workloads to green nodes; the node is cordoned and goes away with blue")
			st.Drain.KeepJobs = x.g.Jobs != JobsEvict && hasJobs(ix, n.Name)
			if ws := movable(ix, n.Name); len(ws) > 0 {
				st.Postconditions = append(st.Postconditions, plan.NewCheck(mesh.ObjectRef{}, plan.WorkloadsReadyArgs{Workloads: ws},
					"the workloads evicted from "+n.Name+" are ready again elsewhere"))
			}
			if st.Drain.KeepJobs {
				st.Notes = append(st.Notes, "running Jobs are not evicted: the drain waits for them to finish, within its timeout")
			}
			x.b.Add(st, before...)
			done = append(done, st.ID)
		}
		gate := plan.Step{ID: fmt.Sprintf("%sbatch/%d/health", x.base, start/batch+1), Risk: plan.RiskNone,
			Description: fmt.Sprintf("health gate after moving batch %d of %d", start/batch+1, (len(order)+batch-1)/batch),
			HealthGate:  &plan.HealthGate{Probe: x.b.Probe(), Scope: "blue-green batch", SettleSeconds: pace}}
		x.b.Add(gate, done...)
		before = []string{gate.ID}
	}
}

// movable lists the Deployments and StatefulSets with pods on the node, as "Kind/namespace/name".
func movable(ix *steps.Index, node string) []string {
	var out []string
	for _, w := range ix.On(node) {
		if w.Kind == "Deployment" || w.Kind == "StatefulSet" {
			out = append(out, w.Kind+"/"+w.Namespace+"/"+w.Name)
		}
	}
	sort.Strings(out)
	return out
}

func hasJobs(ix *steps.Index, node string) bool {
	for _, w := range ix.On(node) {
		if w.Kind == "Job" || w.Kind == "CronJob" {
			return true
		}
	}
	return false
}

// finish removes blue once no node it runs on has an ambient pod, makes istiod trust green alone,
// drops the colour label and the Karpenter hold from the blue nodes, and says which nodes can go.
func (x *bg) finish() {
	// Blue places pods on every node not labelled green: a node that joined uncoloured during the move
	// counts as blue too.
	sel := x.label + "!=" + x.greenVal
	empty := plan.NewCheck(mesh.ObjectRef{}, plan.NoAmbientPodsArgs{Selector: sel}, "no ambient pod runs on a node that is not labelled "+x.label+"="+x.greenVal)
	x.b.Add(plan.Step{ID: x.base + "blue-empty", Description: "verify that no node blue runs on has an ambient pod any more", Risk: plan.RiskNone,
		Notes:  []string{"a node that joined during the move without the green label runs blue: cordon and drain it (kubectl drain), then resume"},
		Verify: &plan.Verification{Checks: []plan.Check{empty}}})
	h := x.blueRel
	id := x.base + "blue/"
	x.b.Add(plan.Step{ID: id + "backup", Description: fmt.Sprintf("back up the blue ztunnel %s (Helm release, DaemonSet) and read the backup back", x.blue.Name), Risk: plan.RiskNone,
		Backup: &plan.Backup{Objects: []plan.BackupObject{{HelmRelease: h.Name, Object: steps.HelmRef(h)},
			{APIVersion: "apps/v1", Object: x.blue.Ref()}}},
		Postconditions: []plan.Check{plan.NewCheck(mesh.ObjectRef{}, plan.BackupReadableArgs{}, "every backed-up object reads back equal")}})
	rm := plan.Step{ID: id + "uninstall", Description: fmt.Sprintf("uninstall the blue ztunnel %s/%s", x.blue.Namespace, x.blue.Name),
		Reason: "no pod uses it: every ambient pod runs on a green node", Risk: plan.RiskMedium,
		Preconditions: []plan.Check{empty},
		HelmUninstall: &plan.HelmUninstall{Release: h.Name, Namespace: h.Namespace, Chart: h.Chart, BackupStep: id + "backup", FromVersion: h.ChartVersion},
		// istiod stops trusting blue next: none of its pods may still run, terminating ones included.
		Postconditions: []plan.Check{plan.NewCheck(x.blue.Ref(), plan.NodeAgentAbsentArgs{}, "no pod of the blue ztunnel is left on any node")},
		Notes:          []string{fmt.Sprintf("undo: reinstall from the backup written by %sbackup", id)}}
	x.b.Add(rm)
	gone := h
	gone.Status = steps.StatusUninstalled
	x.b.Track(gone)
	x.trust(false)
	var objs, held []mesh.ObjectRef
	pools := map[string][]string{}
	for _, n := range x.blueNodes {
		objs = append(objs, nodeObject(n.Name))
		pool := steps.OrDefault(n.Pool, "(no pool)")
		pools[pool] = append(pools[pool], n.Name)
	}
	for _, np := range x.g.Capacity.NodePools {
		held = append(held, x.heldNodes(np)...)
	}
	if len(objs) > 0 {
		x.b.Add(plan.Step{ID: x.base + "unlabel-blue", Description: fmt.Sprintf("remove label %s from the %d blue node(s)", x.label, len(objs)), Risk: plan.RiskLow,
			PatchLabels: &plan.PatchLabels{APIVersion: "v1", Objects: objs, Remove: []string{x.label}}})
	}
	if len(held) > 0 {
		x.b.Add(plan.Step{ID: x.base + "release", Description: fmt.Sprintf("let Karpenter consolidate the %d empty blue node(s) it launched", len(held)), Risk: plan.RiskLow,
			Annotate: &plan.Annotate{APIVersion: "v1", Objects: held, Remove: []string{annotationDoNotDisrupt}}})
	}
	if np := x.g.ScaleDownNodePool; np != "" {
		x.scaleDown(np)
	}
	var names []string
	for pool, ns := range pools {
		names = append(names, fmt.Sprintf("pool %s: %d node(s) (%s)", pool, len(ns), plan.ListSome(ns, 10)))
	}
	sort.Strings(names)
	x.b.Finding(plan.Finding{Code: plan.CodeBlueGreenNodesToRemove, Severity: plan.Info, Object: x.blue.Ref(),
		Message: "once the plan is done, the blue nodes are empty and cordoned and can go: " + strings.Join(names, "; "),
		Remedy:  "delete them with their node group (or let Karpenter consolidate them); the plan deletes no node"})
}

// scaleDown stops a NodePool from launching nodes: spec.limits.cpu 0. Undo puts the limit back as it
// was (or drops it: server-side apply releases a field the applier no longer sets).
func (x *bg) scaleDown(name string) {
	p, _ := x.s.NodePool(name)
	obj := func(limits map[string]any) map[string]any {
		return map[string]any{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": map[string]any{"name": name},
			"spec": map[string]any{"limits": limits}}
	}
	undo := map[string]any{}
	if cpu, ok := p.Limits["cpu"]; ok {
		undo["cpu"] = cpu
	}
	id := x.base + "scale-down/" + name
	x.b.Add(plan.Step{ID: id, Description: "stop NodePool " + name + " from launching nodes (spec.limits.cpu 0)", Risk: plan.RiskMedium,
		Reason:      "asked for: its nodes ran the blue ztunnel and are empty now",
		ApplyObject: &plan.ApplyObject{Object: obj(map[string]any{"cpu": "0"})},
		Rollback: &plan.Step{ID: id + "/undo", Description: "give NodePool " + name + " its cpu limit back", Risk: plan.RiskMedium,
			ApplyObject: &plan.ApplyObject{Object: obj(undo)}}})
}
