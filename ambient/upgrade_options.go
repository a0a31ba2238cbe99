package ambient

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/ambientkit/ambientkit/ambient/knowledge/releases"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
	"github.com/ambientkit/ambientkit/ztunnel"
)

// ZtunnelStrategy is how ztunnel moves to the new version (ztunnel.Strategy): ZtunnelNodeByNode
// (the default) or ZtunnelInPlace, each a struct with its own options.
type ZtunnelStrategy = ztunnel.Strategy

// ZtunnelNodeByNode switches the DaemonSet to OnDelete, then per node: cordon, drain (Eviction API,
// PDBs respected), replace the ztunnel pod, wait until it is ready, uncordon; in batches of BatchSize
// nodes, each drain bounded by DrainTimeout. It is the default: no pod keeps a connection through a
// ztunnel that is being replaced.
type ZtunnelNodeByNode = ztunnel.NodeByNode

// ZtunnelInPlace lets the DaemonSet roll (maxSurge 1, maxUnavailable 0); long-lived connections on
// every node are reset.
type ZtunnelInPlace = ztunnel.InPlace

// ZtunnelBlueGreen installs a second ztunnel on other nodes (a Karpenter NodePool, relabelled nodes
// or nodes the caller adds), moves workloads there in batches and removes the old one; no node ever
// runs two (see ztunnel.BlueGreen).
type ZtunnelBlueGreen = ztunnel.BlueGreen

// ZtunnelGreenCapacity says where the green nodes of ZtunnelBlueGreen come from (ztunnel.GreenCapacity).
type ZtunnelGreenCapacity = ztunnel.GreenCapacity

// DefaultChartRepository is Istio's Helm chart repository.
const DefaultChartRepository = steps.DefaultChartRepository

// ChartSource says where charts come from (a Helm repository, an OCI registry or a local folder).
type ChartSource = steps.ChartSource

// ErrBlocked is returned, with the plan, when findings stop the upgrade: the plan shows why. It is
// plan.ErrBlocked, which every planner wraps.
var ErrBlocked = plan.ErrBlocked

// UpgradeOptions configure PlanUpgrade. Only Target is required; every zero value is a safe default.
type UpgradeOptions struct {
	// Target is the Istio version to reach.
	Target mesh.Version
	// Strategy for the control plane: StrategyRevision or StrategyInPlace; empty takes
	// DefaultStrategy (in place for an unrevisioned control plane, a revision otherwise), and the
	// plan says which it took.
	Strategy Strategy
	// Ztunnel is the ztunnel strategy with its options: ZtunnelNodeByNode{BatchSize: 5} (nil means
	// ZtunnelNodeByNode{}), ZtunnelInPlace{} or ZtunnelBlueGreen{Capacity: ...}.
	Ztunnel ZtunnelStrategy
	// TagOrder moves these tags first, in this order; the others follow lowest risk first, default last.
	TagOrder []string
	// SkipRestart leaves sidecar workloads running after their tag moves (they pick up the new
	// revision on their next restart). The old revision cannot be removed while they run.
	SkipRestart bool
	// RestartBatchSize is how many workloads restart together after a tag move; 0 means 1.
	RestartBatchSize int
	// Charts says where charts come from.
	Charts ChartSource
	// Values are extra Helm values by release name or chart name (release wins), merged over the
	// values the release has today. They must be JSON data: map[string]any, []any, strings, numbers,
	// booleans (what sigs.k8s.io/yaml decodes).
	Values map[string]map[string]any
	// RevisionName names the new istiod revision; empty derives it from the version ("1-31-4").
	RevisionName string
	// NoChain refuses a target more than one minor beyond the data plane instead of chaining the
	// upgrade through each intermediate minor.
	NoChain bool
	// Probe names the caller's health probe used by health gates; empty means "mesh-health".
	Probe string
	// Waive lists waivable finding codes the caller accepts.
	Waive []plan.Code
	// Releases is the release data; nil means releases.Default().
	Releases *releases.Data
	// Today is the date end of life is judged at (planners read no clock).
	Today time.Time
}

func (o *UpgradeOptions) ztunnel() ZtunnelStrategy {
	if o.Ztunnel == nil {
		return ZtunnelNodeByNode{}
	}
	return o.Ztunnel
}

func (o *UpgradeOptions) validate(data *releases.Data) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if o.Target.IsZero() {
		bad("target version is required (for example mesh.MustParseVersion(%q))", data.Newest().String())
	} else if err := data.Check(o.Target); err != nil {
		bad("target: %w", err)
	}
	switch o.Strategy {
	case "", StrategyRevision, StrategyInPlace:
	default:
		bad("strategy %q is not %q or %q", o.Strategy, StrategyRevision, StrategyInPlace)
	}
	if err := o.ztunnel().Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.RestartBatchSize < 0 {
		bad("restart batch size cannot be negative")
	}
	if o.Strategy == StrategyInPlace && o.RevisionName != "" {
		bad("revisionName names a new revision; an in-place upgrade keeps the existing one")
	}
	if o.Strategy == StrategyInPlace && len(o.TagOrder) > 0 {
		bad("tagOrder applies to revision upgrades; an in-place upgrade moves no tags")
	}
	if o.RevisionName != "" && !validName(o.RevisionName) {
		bad("revision name %q is not a DNS label (lower-case letters, digits and '-', at most 63)", o.RevisionName)
	}
	if err := o.Charts.Validate(); err != nil {
		errs = append(errs, err)
	}
	names := make([]string, 0, len(o.Values))
	for n := range o.Values {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := plan.NormalizeValues(o.Values[n]); err != nil {
			bad("values for %q: %w", n, err)
		}
	}
	for _, c := range o.Waive {
		if !plan.KnownCode(c) {
			bad("cannot waive unknown finding code %q; see plan.AllCodes()", c)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// DefaultReleases returns the embedded release data (releases.Default), for callers that need the
// same table the planners use by default.
func DefaultReleases() *releases.Data { return releases.Default() }
