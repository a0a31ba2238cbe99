package ztunnel

import (
	"fmt"
	"strconv"
	"time"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// Strategy is how ztunnel moves to a new version: InPlace, NodeByNode or BlueGreen. Each strategy is its own
// struct with its own options; the zero value of each is a safe default.
type Strategy interface {
	// Name is the strategy as options, flags and plan metadata spell it ("in-place", "node-by-node", "blue-green").
	Name() string
	// Settings are the strategy's options as strings, for the plan's metadata.
	Settings() map[string]string
	// Validate reports options that cannot be planned; the error wraps plan.ErrInvalidOptions.
	Validate() error
}

// Strategy names.
const (
	NameInPlace    = "in-place"
	NameNodeByNode = "node-by-node"
)

// InPlace lets the DaemonSet roll (the chart's maxSurge 1, maxUnavailable 0): every node's ztunnel is
// replaced while its pods run, so their long-lived connections are reset.
type InPlace struct{}

// Name returns "in-place".
func (InPlace) Name() string { return NameInPlace }

// Settings returns no settings.
func (InPlace) Settings() map[string]string { return nil }

// Validate accepts every InPlace.
func (InPlace) Validate() error { return nil }

// DefaultDrainTimeout bounds each node's drain when NodeByNode.DrainTimeout is zero.
const DefaultDrainTimeout = 10 * time.Minute

// NodeByNode switches the DaemonSet to OnDelete, then, node by node in batches: cordon, drain (the
// Eviction API, PodDisruptionBudgets respected), delete the ztunnel pod so the DaemonSet recreates it at
// the new version, wait until it is ready, uncordon; a health gate after every batch. No pod keeps a
// connection through a ztunnel that is being replaced. It is the default strategy.
type NodeByNode struct {
	// BatchSize is how many nodes are replaced together; 0 means 1.
	BatchSize int
	// DrainTimeout bounds each node's drain; 0 means DefaultDrainTimeout.
	DrainTimeout time.Duration
	// LocalStorage says what happens to pods with emptyDir volumes, whose data a drain loses; empty
	// means LocalStorageAsk: an approval naming every such pod before the first drain that loses data.
	LocalStorage LocalStoragePolicy
}

// Name returns "node-by-node".
func (NodeByNode) Name() string { return NameNodeByNode }

// Settings returns the batch size, and the drain timeout when it is not the default.
func (n NodeByNode) Settings() map[string]string {
	out := map[string]string{"batchSize": strconv.Itoa(n.batch())}
	if n.DrainTimeout > 0 && n.DrainTimeout != DefaultDrainTimeout {
		out["drainTimeout"] = n.DrainTimeout.String()
	}
	if n.LocalStorage == LocalStorageEvict {
		out["localStorage"] = string(LocalStorageEvict)
	}
	return out
}

// Validate refuses negative sizes and timeouts.
func (n NodeByNode) Validate() error {
	switch {
	case n.BatchSize < 0:
		return fmt.Errorf("%w: node-by-node batch size %d is negative", plan.ErrInvalidOptions, n.BatchSize)
	case n.DrainTimeout < 0:
		return fmt.Errorf("%w: node-by-node drain timeout %s is negative", plan.ErrInvalidOptions, n.DrainTimeout)
	case n.DrainTimeout > 0 && n.DrainTimeout < time.Second:
		return fmt.Errorf("%w: node-by-node drain timeout %s is under a second; give it in seconds or more", plan.ErrInvalidOptions, n.DrainTimeout)
	case n.LocalStorage != "" && n.LocalStorage != LocalStorageAsk && n.LocalStorage != LocalStorageEvict:
		return fmt.Errorf("%w: local storage policy %q is not %q or %q", plan.ErrInvalidOptions, n.LocalStorage, LocalStorageAsk, LocalStorageEvict)
	}
	return nil
}

func (n NodeByNode) batch() int { return max(1, n.BatchSize) }

func (n NodeByNode) drainSeconds() int64 {
	if n.DrainTimeout > 0 {
		return int64(n.DrainTimeout.Seconds())
	}
	return int64(DefaultDrainTimeout.Seconds())
}

// ParseStrategy returns the strategy a name stands for, with default options ("" is node-by-node),
// for command lines and configuration files.
func ParseStrategy(name string) (Strategy, error) {
	switch name {
	case "", NameNodeByNode:
		return NodeByNode{}, nil
	case NameInPlace:
		return InPlace{}, nil
	case NameBlueGreen:
		return BlueGreen{}, nil
	}
	return nil, fmt.Errorf("%w: ztunnel strategy %q is not %s, %s or %s", plan.ErrInvalidOptions, name, NameNodeByNode, NameInPlace, NameBlueGreen)
}
