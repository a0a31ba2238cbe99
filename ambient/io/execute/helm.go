package execute

import (
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"

	"context"
	"encoding/json"
	"reflect"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// HelmClient is the part of Helm the executor needs. It is small on purpose: package helmsdk adapts
// the Helm v3 SDK to it, and a Helm v4 adapter or a fake fits the same shape. Implementations must not
// wait for workloads to become ready: the executor verifies readiness itself.
type HelmClient interface {
	// Install installs a new release.
	Install(ctx context.Context, req HelmRequest) (*Release, error)
	// Upgrade upgrades an existing release.
	Upgrade(ctx context.Context, req HelmRequest) (*Release, error)
	// Uninstall removes a release.
	Uninstall(ctx context.Context, req HelmUninstallRequest) error
	// Rollback returns a release to an earlier revision.
	Rollback(ctx context.Context, req HelmRollbackRequest) error
	// Get returns the release's current (latest) revision; ErrReleaseNotFound (wrapped) when none.
	Get(ctx context.Context, release, namespace string) (*Release, error)
}

// HelmRequest asks for an install or an upgrade.
type HelmRequest struct {
	// Release and Namespace name the release.
	Release   string
	Namespace string
	// Chart says where the chart comes from: a repository URL, an oci:// reference or a local path.
	Chart plan.ChartRef
	// Values are the user values (helm --values).
	Values map[string]any
	// ReuseValues keeps the release's current user values under Values (helm --reuse-values).
	ReuseValues bool
	// DryRun renders and validates against the server without changing anything.
	DryRun bool
}

// HelmUninstallRequest asks for an uninstall.
type HelmUninstallRequest struct {
	// Release and Namespace name the release.
	Release   string
	Namespace string
	// DryRun simulates the uninstall.
	DryRun bool
}

// HelmRollbackRequest asks for a rollback to Revision.
type HelmRollbackRequest struct {
	// Release and Namespace name the release.
	Release   string
	Namespace string
	// Revision is the Helm revision to return to.
	Revision int
	// DryRun simulates the rollback.
	DryRun bool
}

// Release is a Helm release as the executor sees it (helm status plus helm get values): the same
// record observation keeps in a snapshot. Status is Helm's (deployed, failed, pending-upgrade, ...).
type Release = mesh.HelmRelease

// atTarget reports whether the release already is what the request asks for: deployed, at the
// requested chart version, with the requested values (a subset of them under ReuseValues). Null values
// count as absent, as Helm treats them.
func atTarget(r *Release, req HelmRequest) bool {
	if r == nil || r.Status != "deployed" {
		return false
	}
	if req.Chart.Version != "" && r.ChartVersion != req.Chart.Version {
		return false
	}
	want, have := normalizeValues(req.Values), normalizeValues(r.Values)
	if req.ReuseValues {
		return subset(want, have)
	}
	return reflect.DeepEqual(want, have)
}

// normalizeValues turns values into plain JSON types and drops null leaves and empty maps.
func normalizeValues(v map[string]any) map[string]any {
	if len(v) == 0 {
		return map[string]any{}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return v
	}
	prune(out)
	return out
}

func prune(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			prune(x)
			if len(x) == 0 {
				delete(m, k)
			}
		}
	}
}

func subset(want, have map[string]any) bool {
	for k, w := range want {
		h, ok := have[k]
		if !ok {
			return false
		}
		wm, wIsMap := w.(map[string]any)
		hm, hIsMap := h.(map[string]any)
		if wIsMap && hIsMap {
			if !subset(wm, hm) {
				return false
			}
			continue
		}
		if !reflect.DeepEqual(w, h) {
			return false
		}
	}
	return true
}

// valueDiff lists the top-level keys whose values differ, for messages.
func valueDiff(want, have map[string]any) []string {
	w, h := normalizeValues(want), normalizeValues(have)
	var out []string
	for k := range w {
		if !reflect.DeepEqual(w[k], h[k]) {
			out = append(out, k)
		}
	}
	for k := range h {
		if _, ok := w[k]; !ok {
			out = append(out, k)
		}
	}
	sortStrings(out)
	return out
}
