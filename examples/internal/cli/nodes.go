package cli

import (
	"errors"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ztunnel"
)

// NodeFlags are the flags of the ztunnel strategies that drain nodes: --batch-size and
// --drain-timeout (node-by-node and blue-green), and blue-green's --green-nodepools, --relabel,
// --green-nodes, --green-node-allocatable, --jobs and --local-storage.
type NodeFlags struct {
	BatchSize               int
	DrainTimeout            time.Duration
	GreenNodePools, Relabel string
	GreenNodes              int
	GreenNodeAllocatable    string
	Jobs, LocalStorage      string
}

// blueGreenOnly are the flags that apply to blue-green only.
var blueGreenOnly = []string{"green-nodepools", "relabel", "green-nodes", "green-node-allocatable", "jobs", "local-storage"}

// Register adds the flags and their checks; both and bg prefix the usage of the shared and the
// blue-green-only ones ("" when every flag applies).
func (f *NodeFlags) Register(c *Command, both, bg string) {
	c.add(Spec{Name: "batch-size", Arg: "N", Usage: both + "nodes replaced or drained together, 1 or more (default 1)", Example: "--batch-size 5"})
	c.fs.IntVar(&f.BatchSize, "batch-size", 0, "")
	c.add(Spec{Name: "drain-timeout", Arg: "DURATION", Usage: both + "bound on each node's drain, and on waiting for its Jobs, above 0 (default 10m)", Example: "--drain-timeout 20m"})
	c.fs.DurationVar(&f.DrainTimeout, "drain-timeout", 0, "")
	str := func(p *string, s Spec, def string) { c.add(s); c.fs.StringVar(p, s.Name, def, s.Usage) }
	str(&f.GreenNodePools, Spec{Name: "green-nodepools", Arg: "NODEPOOL,...", Usage: bg + "Karpenter NodePools whose new nodes run the new ztunnel (their template gets the green label)", Example: "--green-nodepools general,batch"}, "")
	str(&f.Relabel, Spec{Name: "relabel", Arg: "NODE,...", Usage: bg + "existing nodes switched to the new ztunnel one at a time (each drained first)", Example: "--relabel ip-10-0-1-11.ec2.internal"}, "")
	c.add(Spec{Name: "green-nodes", Arg: "N", Usage: bg + "ready green nodes to wait for before workloads move, 1 or more (nodes you add labelled ambientkit.io/ztunnel=green)", Example: "--green-nodes 3"})
	c.fs.IntVar(&f.GreenNodes, "green-nodes", 0, "")
	str(&f.GreenNodeAllocatable, Spec{Name: "green-node-allocatable", Arg: "RESOURCE=QUANTITY,...", Usage: bg + "what each new green node offers pods, so the evicted pods are placed on green by their requests (default: like the NodePool's or blue's largest node)", Example: "--green-node-allocatable cpu=8,memory=32Gi,pods=58"}, "")
	str(&f.Jobs, Spec{Name: "jobs", Arg: "wait|evict", Usage: bg + "running Jobs: drains wait until they finish (default) or evict them", Example: "--jobs evict"}, "")
	str(&f.LocalStorage, Spec{Name: "local-storage", Arg: "ask|evict", Usage: bg + "pods with emptyDir data: ask before the first drain that loses it (default), or evict", Example: "--local-storage evict"}, "")
	c.check(func() error { return f.check(c) })
}

// check refuses sizes below 1, durations of 0 or less, names that are no node or NodePool names,
// unknown policies and capacity given two ways. A size or duration left out takes the planner's
// default; one given is never changed into another.
func (f *NodeFlags) check(c *Command) error {
	var errs []error
	for _, n := range []struct {
		name string
		v    int
	}{{"batch-size", f.BatchSize}, {"green-nodes", f.GreenNodes}} {
		if c.IsSet(n.name) && n.v < 1 {
			errs = append(errs, usage("--%s %d: want 1 or more", n.name, n.v))
		}
	}
	if c.IsSet("drain-timeout") && f.DrainTimeout <= 0 {
		errs = append(errs, usage("--drain-timeout %s: want a duration above 0 (10m, 1h)", f.DrainTimeout))
	}
	for _, n := range List(f.GreenNodePools) {
		errs = append(errs, CheckName("green-nodepools", n, true))
	}
	for _, n := range List(f.Relabel) {
		errs = append(errs, CheckName("relabel", n, true))
	}
	if _, err := f.allocatable(); err != nil {
		errs = append(errs, err)
	}
	if err := f.BlueGreen().Validate(); err != nil {
		errs = append(errs, usage("%v", err))
	}
	return errors.Join(errs...)
}

// BlueGreen returns the blue-green strategy the flags ask for.
func (f *NodeFlags) BlueGreen() ztunnel.BlueGreen {
	alloc, _ := f.allocatable()
	return ztunnel.BlueGreen{BatchSize: f.BatchSize, DrainTimeout: f.DrainTimeout, Jobs: ztunnel.JobPolicy(f.Jobs), LocalStorage: ztunnel.LocalStoragePolicy(f.LocalStorage),
		Capacity: ztunnel.GreenCapacity{NodePools: List(f.GreenNodePools), Relabel: List(f.Relabel), Nodes: f.GreenNodes, NodeAllocatable: alloc}}
}

// allocatable parses --green-node-allocatable ("cpu=8,memory=32Gi,pods=58") into the snapshot's
// units: cpu in millicores, the rest in units.
func (f *NodeFlags) allocatable() (mesh.Resources, error) {
	if f.GreenNodeAllocatable == "" {
		return nil, nil
	}
	out := mesh.Resources{}
	for _, kv := range List(f.GreenNodeAllocatable) {
		k, v, ok := strings.Cut(kv, "=")
		q, err := resource.ParseQuantity(v)
		if !ok || k == "" || err != nil {
			return nil, usage("--green-node-allocatable %q: want RESOURCE=QUANTITY, as cpu=8 or memory=32Gi", kv)
		}
		if corev1.ResourceName(k) == corev1.ResourceCPU {
			out[k] = q.MilliValue()
		} else {
			out[k] = q.Value()
		}
	}
	return out, nil
}
