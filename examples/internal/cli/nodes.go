package cli

import (
	"time"

	"github.com/ambientkit/ambientkit/ztunnel"
)

// NodeFlags are the flags of the ztunnel strategies that drain nodes: --batch-size and
// --drain-timeout (node-by-node and blue-green), and blue-green's --green-nodepools, --relabel,
// --green-nodes, --jobs and --local-storage.
type NodeFlags struct {
	BatchSize               int
	DrainTimeout            time.Duration
	GreenNodePools, Relabel string
	GreenNodes              int
	Jobs, LocalStorage      string
}

// blueGreenOnly are the flags that apply to blue-green only.
var blueGreenOnly = []string{"green-nodepools", "relabel", "green-nodes", "jobs", "local-storage"}

// Register adds the flags; both and bg prefix the usage of the shared and the blue-green-only ones
// ("" when every flag applies).
func (f *NodeFlags) Register(c *Command, both, bg string) {
	c.add(Spec{Name: "batch-size", Arg: "N", Usage: both + "nodes replaced or drained together (default 1)", Example: "--batch-size 5"})
	c.fs.IntVar(&f.BatchSize, "batch-size", 0, "")
	c.add(Spec{Name: "drain-timeout", Arg: "DURATION", Usage: both + "bound on each node's drain, and on waiting for its Jobs (default 10m)", Example: "--drain-timeout 20m"})
	c.fs.DurationVar(&f.DrainTimeout, "drain-timeout", 0, "")
	str := func(p *string, s Spec, def string) { c.add(s); c.fs.StringVar(p, s.Name, def, s.Usage) }
	str(&f.GreenNodePools, Spec{Name: "green-nodepools", Arg: "NODEPOOL,...", Usage: bg + "Karpenter NodePools whose new nodes run the new ztunnel (their template gets the green label)", Example: "--green-nodepools general,batch"}, "")
	str(&f.Relabel, Spec{Name: "relabel", Arg: "NODE,...", Usage: bg + "existing nodes switched to the new ztunnel one at a time (each drained first)", Example: "--relabel ip-10-0-1-11.ec2.internal"}, "")
	c.add(Spec{Name: "green-nodes", Arg: "N", Usage: bg + "ready green nodes to wait for before workloads move (nodes you add labelled ambientkit.io/ztunnel=green)", Example: "--green-nodes 3"})
	c.fs.IntVar(&f.GreenNodes, "green-nodes", 0, "")
	str(&f.Jobs, Spec{Name: "jobs", Arg: "wait|evict", Usage: bg + "running Jobs: drains wait until they finish (default) or evict them", Example: "--jobs evict"}, "")
	str(&f.LocalStorage, Spec{Name: "local-storage", Arg: "ask|evict", Usage: bg + "pods with emptyDir data: ask before the first drain that loses it (default), or evict", Example: "--local-storage evict"}, "")
}

// BlueGreen returns the blue-green strategy the flags ask for.
func (f *NodeFlags) BlueGreen() ztunnel.BlueGreen {
	return ztunnel.BlueGreen{BatchSize: f.BatchSize, DrainTimeout: f.DrainTimeout, Jobs: ztunnel.JobPolicy(f.Jobs), LocalStorage: ztunnel.LocalStoragePolicy(f.LocalStorage),
		Capacity: ztunnel.GreenCapacity{NodePools: List(f.GreenNodePools), Relabel: List(f.Relabel), Nodes: f.GreenNodes}}
}
