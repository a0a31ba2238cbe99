package ambient

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ambientkit/ambientkit/ambient/mesh"
	"github.com/ambientkit/ambientkit/ambient/plan"
	"github.com/ambientkit/ambientkit/ambient/releases"
)

// ZtunnelStrategy is how ztunnel moves to the new version.
type ZtunnelStrategy string

// ztunnel strategies.
const (
	// ZtunnelNodeByNode switches the DaemonSet to OnDelete, then per node: cordon, drain (Eviction API,
	// PDBs respected), replace the ztunnel pod, wait until it is ready, uncordon; in batches. It is the
	// default: no pod keeps a connection through a ztunnel that is being replaced.
	ZtunnelNodeByNode ZtunnelStrategy = "node-by-node"
	// ZtunnelInPlace lets the DaemonSet roll (maxSurge 1, maxUnavailable 0); long-lived connections on
	// every node are reset.
	ZtunnelInPlace ZtunnelStrategy = "in-place"
	// ZtunnelBlueGreen runs a second ztunnel on a new node pool (ztunnel.BlueGreenZtunnel).
	ZtunnelBlueGreen ZtunnelStrategy = "blue-green"
)

// DefaultChartRepository is Istio's Helm chart repository.
const DefaultChartRepository = "https://istio-release.storage.googleapis.com/charts"

// ChartSource says where charts come from. Set at most one of Repository, OCI and Dir; the zero value
// means DefaultChartRepository.
type ChartSource struct {
	// Repository is a Helm repository URL.
	Repository string `json:"repository,omitempty"`
	// OCI is an oci:// registry path holding the charts (oci://registry/path; the chart name is appended).
	OCI string `json:"oci,omitempty"`
	// Dir is a local directory with one folder per chart (base, istiod, cni, ztunnel, gateway), as
	// `helm pull --untar` leaves them.
	Dir string `json:"dir,omitempty"`
	// Paths overrides the local path of single charts by chart name (for example the istio source
	// layout: istiod → manifests/charts/istio-control/istio-discovery).
	Paths map[string]string `json:"paths,omitempty"`
}

// ErrBlocked is returned, with the plan, when findings stop the upgrade: the plan shows why.
var ErrBlocked = errors.New("upgrade blocked by findings")

// ErrNotSupported is returned for options this version of the library cannot plan yet.
var ErrNotSupported = errors.New("not supported")

// UpgradeOptions configure PlanUpgrade. Only Target is required; every zero value is a safe default.
type UpgradeOptions struct {
	// Target is the Istio version to reach.
	Target mesh.Version
	// Strategy for the control plane: StrategyRevision (default) or StrategyInPlace.
	Strategy Strategy
	// Ztunnel strategy: ZtunnelNodeByNode (default), ZtunnelInPlace or ZtunnelBlueGreen.
	Ztunnel ZtunnelStrategy
	// BatchSize is how many nodes node-by-node replaces at once; 0 means 1.
	BatchSize int
	// DrainTimeout bounds each node drain; 0 means 10 minutes.
	DrainTimeout time.Duration
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
	// values the release has today.
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
	switch o.Ztunnel {
	case "", ZtunnelNodeByNode, ZtunnelInPlace:
	case ZtunnelBlueGreen:
		errs = append(errs, fmt.Errorf("%w: ztunnel strategy %q needs ztunnel.BlueGreenZtunnel, which this version does not have yet; use %q", ErrNotSupported, o.Ztunnel, ZtunnelNodeByNode))
	default:
		bad("ztunnel strategy %q is not %q, %q or %q", o.Ztunnel, ZtunnelNodeByNode, ZtunnelInPlace, ZtunnelBlueGreen)
	}
	if o.BatchSize < 0 || o.RestartBatchSize < 0 {
		bad("batch sizes cannot be negative")
	}
	if o.BatchSize > 0 && o.Ztunnel == ZtunnelInPlace {
		bad("batchSize applies to node-by-node ztunnel replacement, not %q; drop one of them", ZtunnelInPlace)
	}
	if o.DrainTimeout < 0 {
		bad("drain timeout cannot be negative")
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
	if err := o.Charts.validate(); err != nil {
		errs = append(errs, err)
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

func (c ChartSource) validate() error {
	n := 0
	for _, s := range []string{c.Repository, c.OCI, c.Dir} {
		if s != "" {
			n++
		}
	}
	switch {
	case n > 1:
		return fmt.Errorf("chart source: set only one of repository, oci and dir")
	case c.Repository != "" && !strings.HasPrefix(c.Repository, "https://") && !strings.HasPrefix(c.Repository, "http://"):
		return fmt.Errorf("chart source: repository %q is not an http(s) URL (for an OCI registry use OCI with oci://, for a folder use Dir)", c.Repository)
	case c.OCI != "" && !strings.HasPrefix(c.OCI, "oci://"):
		return fmt.Errorf("chart source: OCI reference %q must start with oci://", c.OCI)
	case c.Dir != "" && strings.Contains(c.Dir, "://"):
		return fmt.Errorf("chart source: dir %q looks like a URL; use Repository or OCI", c.Dir)
	}
	for name, p := range c.Paths {
		if p == "" || strings.Contains(p, "://") {
			return fmt.Errorf("chart source: path for chart %q (%q) must be a local path", name, p)
		}
	}
	return nil
}

// ref returns the chart reference for a chart name and version.
func (c ChartSource) ref(chart string, v mesh.Version) plan.ChartRef {
	r := plan.ChartRef{Name: chart, Version: v.String()}
	switch {
	case c.Paths[chart] != "":
		r.Path = c.Paths[chart]
	case c.Dir != "":
		r.Path = strings.TrimSuffix(c.Dir, "/") + "/" + chart
	case c.OCI != "":
		r.OCI = strings.TrimSuffix(c.OCI, "/") + "/" + chart
	case c.Repository != "":
		r.Repository = c.Repository
	default:
		r.Repository = DefaultChartRepository
	}
	return r
}

// DefaultReleases returns the embedded release data (releases.Default), for callers that need the
// same table the planners use by default.
func DefaultReleases() *releases.Data { return releases.Default() }
