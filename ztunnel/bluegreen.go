package ztunnel

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ambientkit/ambientkit/ambient/knowledge/compat"
	"github.com/ambientkit/ambientkit/ambient/knowledge/releases"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
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
	// NodeAllocatable is what each new green node offers pods (cpu in millicores, memory in bytes,
	// pods), for placing the pods the drains evict: the nodes the caller adds, or those a NodePool
	// launches (else taken from the pool's largest node, then blue's largest). Nil, with no green
	// node in the snapshot and no NodePool, leaves green's room unassessed, which a finding says.
	NodeAllocatable mesh.Resources
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
	// Namespace and ResourceName of green (the chart's resourceName: DaemonSet and ServiceAccount,
	// and with platform=openshift its ClusterRole and ClusterRoleBinding). Empty derives
	// "ztunnel-<GreenValue>".
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
	// CordonAll cordons every blue node before the first drain, so that no evicted pod lands on a
	// blue node a later batch drains again; it takes the capacity of every blue node at once. By
	// default each batch cordons its own nodes right before draining them.
	CordonAll bool
	// ScaleDownNodePool names a Karpenter NodePool of the blue nodes to stop (spec.limits cpu 0)
	// once blue is gone; empty leaves every NodePool alone.
	ScaleDownNodePool string
	// ProbeImage is the image of the probe pod that proves green captures traffic before the first
	// blue node is cordoned; empty means DefaultProbeImage.
	ProbeImage string
	// SkipProbe leaves the probe pod out (no image can be pulled, or no pod may be created): green is
	// then proven only by a ready green ztunnel on a ready green node.
	SkipProbe bool
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
	if g.CordonAll {
		out["cordon"] = "all"
	}
	if len(g.Capacity.NodeAllocatable) > 0 {
		out["greenNodeAllocatable"] = g.Capacity.NodeAllocatable.Format()
	}
	if g.SkipProbe {
		out["probe"] = "off"
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
	case len(g.Capacity.NodeAllocatable) > 0 && len(g.Capacity.Relabel) > 0:
		bad("green capacity: NodeAllocatable describes new green nodes; relabelled nodes keep their own allocatable, so leave it unset")
	case g.ScaleDownNodePool != "" && steps.Contains(g.Capacity.NodePools, g.ScaleDownNodePool):
		bad("NodePool %q brings the green nodes; it cannot also be scaled down at the end", g.ScaleDownNodePool)
	}
	for _, k := range slices.Sorted(maps.Keys(g.Capacity.NodeAllocatable)) {
		if v := g.Capacity.NodeAllocatable[k]; v <= 0 {
			bad("green capacity: NodeAllocatable %s is %d; give a positive amount or leave it out", k, v)
		}
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
	// Target is green's version (the ztunnel chart's version). Required; DefaultTarget is the
	// version a caller with none in mind would take.
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
	name := fmt.Sprintf("blue-green ztunnel %s/%s (%s) → %s", z.Namespace, z.Name, z.Version, opts.Target)
	if z.Version == opts.Target {
		name = fmt.Sprintf("blue-green ztunnel %s/%s, same version %s (new pods on the green nodes)", z.Namespace, z.Name, z.Version)
	}
	p := plan.Begin(s, plan.Metadata{
		Name:      name,
		Operation: "bluegreen-ztunnel",
		From:      z.Version,
		To:        opts.Target,
		Options:   map[string]string{"target": opts.Target.String(), "ztunnel": NameBlueGreen},
	})
	for k, v := range opts.Strategy.Settings() {
		p.Metadata.Options[k] = v
	}
	rev := opts.Revision
	if rev == "" {
		rev, _ = s.ZtunnelRevision(z)
	}
	// The compatibility gate of the mesh as it runs, the same one the prechecks step re-runs at
	// apply time: a blue-green must not start on a mesh the gate stops. Its trust rules also judge
	// green, which the istiod it connects to must come to trust.
	green, err := opts.Strategy.AddedZtunnel(s, opts.Target, rev)
	if err != nil {
		return nil, err
	}
	gate, err := compat.Compute(s, compat.Options{Releases: opts.Releases, Today: opts.Today, Waive: opts.Waive, AddsZtunnels: []compat.AddedZtunnel{green}})
	if err != nil {
		return nil, err
	}
	b := steps.New(p, steps.Options{Charts: opts.Charts, Values: opts.Values, Probe: opts.Probe})
	for _, f := range gate.Findings {
		b.Finding(f)
	}
	b.Add(compat.PrecheckStep("", mesh.Version{}, ""))
	if err := AddBlueGreen(b, s, BlueGreenStepOptions{Target: opts.Target, Revision: rev, Strategy: opts.Strategy}); err != nil {
		return nil, err
	}
	if err := b.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", plan.ErrInvalidOptions, err)
	}
	return plan.Finalize(p, plan.FinalizeOptions{Waive: opts.Waive, Accounting: compat.Accounting(s, s, "the ztunnel swap", "")})
}

func ztunnelNames(s *mesh.Snapshot) []string {
	var out []string
	for _, z := range s.Ztunnels {
		out = append(out, z.Namespace+"/"+z.Name)
	}
	return out
}

// BlueGreenStepOptions configure AddBlueGreen.
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
	// asked: the approval of the emptyDir data lost is in the plan.
	asked bool
	// stuck are the blue nodes ambient DaemonSet pods stay on (daemonSetsOnBlue).
	stuck []string
	// released are the held blue nodes a step already let Karpenter disrupt again.
	released map[string]bool
}

// AddBlueGreen adds the steps of a blue-green ztunnel replacement of the snapshot's one ztunnel to
// a plan being built; BlueGreenZtunnel and ambient.PlanUpgrade (with Ztunnel: BlueGreen{...}) call
// it.
func AddBlueGreen(b *steps.Builder, s *mesh.Snapshot, opts BlueGreenStepOptions) error {
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
	for _, phase := range blueGreenPhases {
		phase.plan(x)
	}
	return nil
}

// blueGreenPhases are the phases of a blue-green in the order the seed runbook does them by hand: what
// a reviewer must know, blue labelled and pinned to its nodes, istiod trusting both, green installed,
// green capacity brought and green proven on it, the workloads moved off blue in waves, then blue
// removed and istiod trusting green alone. TestBlueGreenSafetyOrder states that order over generated
// meshes, and swaps two of these to show it notices.
var blueGreenPhases = []struct {
	name string
	plan func(x *bg)
}{
	{"findings", (*bg).findings},
	{"label blue", (*bg).labelBlue},
	{"pin blue", (*bg).pinBlue},
	{"trust both", func(x *bg) { x.trust(true) }},
	{"install green", (*bg).installGreen},
	{"green capacity", (*bg).capacity},
	{"green proven", (*bg).proveGreen},
	{"drains", (*bg).moveWorkloads},
	{"blue removed", (*bg).removeBlue},
	{"trust green only", (*bg).finish},
}

// Green returns the green ztunnel as it will run once the blue-green replacement of the snapshot's
// one ztunnel is done (no pods: its nodes do not exist yet), for planners that simulate what comes
// after. It returns the errors AddBlueGreen returns for the names.
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
		if why := x.resourceNameCollision(); why != "" {
			return fmt.Errorf("%w: green's resourceName %q is blue's: %s", plan.ErrInvalidOptions, x.greenName, why)
		}
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

// labelNodePool is the label Karpenter puts on the nodes of a NodePool.
const labelNodePool = "karpenter.sh/nodepool"

// DefaultTarget is the version a blue-green takes when its caller names none: that of the istiod
// the running ztunnel connects to, when it is newer (ztunnel catches up with its control plane);
// else the running ztunnel's own (a same-version move to new pods, for new nodes or settings). Zero
// when the snapshot has not exactly one ztunnel.
func DefaultTarget(s *mesh.Snapshot) mesh.Version {
	if s == nil || len(s.Ztunnels) != 1 {
		return mesh.Version{}
	}
	z := s.Ztunnels[0]
	if rev, ok := s.ZtunnelRevision(z); ok {
		if r, ok := s.Revision(rev); ok && !r.Version.IsZero() && z.Version.Less(r.Version) {
			return r.Version
		}
	}
	return z.Version
}
