package cluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// PoolLabel names a node's pool, as Karpenter does.
const PoolLabel = "karpenter.sh/nodepool"

// Pool is a group of simulated nodes.
type Pool struct {
	Name  string
	Nodes int
}

// FakeNode builds the Node object of the i-th simulated node (0-based, across all pools) of a pool.
// kwok manages it because of annotation kwok.x-k8s.io/node=fake. Its InternalIP (127.32.x.y) and pod
// CIDR (127.64.i.0/24) are loopback, so an API server call to the "kubelet" or to a pod stays on the
// machine. kubeletVersion is the server's version, as a real kubelet of that release would report.
func FakeNode(pool string, idx, global int, kubeletVersion string) *corev1.Node {
	name := fmt.Sprintf("%s-%d", pool, idx)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("128Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				PoolLabel:                          pool,
				"kubernetes.io/hostname":           name,
				"kubernetes.io/os":                 "linux",
				"kubernetes.io/arch":               "amd64",
				"node.kubernetes.io/instance-type": "kwok",
				"type":                             "kwok",
			},
			Annotations: map[string]string{
				"kwok.x-k8s.io/node":           "fake",
				"node.alpha.kubernetes.io/ttl": "0",
			},
		},
		Spec: corev1.NodeSpec{
			PodCIDR:  fmt.Sprintf("127.64.%d.0/24", global),
			PodCIDRs: []string{fmt.Sprintf("127.64.%d.0/24", global)},
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("127.32.%d.%d", global/250, global%250+1)},
				{Type: corev1.NodeHostName, Address: name},
			},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:  kubeletVersion,
				OperatingSystem: "linux",
				Architecture:    "amd64",
			},
		},
	}
}

// CreateNodes creates the simulated nodes of every pool and waits until kwok reports them Ready.
// It returns the node names per pool.
func CreateNodes(ctx context.Context, cs kubernetes.Interface, pools []Pool, timeout time.Duration) (map[string][]string, error) {
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("server version: %w", err)
	}
	out := map[string][]string{}
	global := 0
	for _, p := range pools {
		for i := 0; i < p.Nodes; i++ {
			n := FakeNode(p.Name, i, global, v.GitVersion)
			global++
			created, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				out[p.Name] = append(out[p.Name], n.Name)
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("create node %s: %w", n.Name, err)
			}
			// Status given at creation is kept for Nodes, but make sure of it.
			if len(created.Status.Addresses) == 0 {
				created.Status = n.Status
				if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
					return nil, fmt.Errorf("set status of node %s: %w", n.Name, err)
				}
			}
			out[p.Name] = append(out[p.Name], n.Name)
		}
	}
	notReady := ""
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := map[string]bool{}
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready[n.Name] = true
				}
			}
		}
		for _, names := range out {
			for _, n := range names {
				if !ready[n] {
					notReady = n
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("nodes not Ready after %s (e.g. %s): %w", timeout, notReady, err)
	}
	return out, nil
}

// LabelExistingNodes spreads the schedulable nodes of a real cluster (kind, existing) over the pools
// by setting PoolLabel where it is missing. It returns the node names per pool.
func LabelExistingNodes(ctx context.Context, cs kubernetes.Interface, pools []Pool) (map[string][]string, error) {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	i := 0
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable {
			continue
		}
		pool := n.Labels[PoolLabel]
		if pool == "" {
			pool = pools[i%len(pools)].Name
			i++
			patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, PoolLabel, pool)
			if _, err := cs.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				return nil, fmt.Errorf("label node %s: %w", n.Name, err)
			}
		}
		out[pool] = append(out[pool], n.Name)
	}
	return out, nil
}
