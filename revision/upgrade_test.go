package revision_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ambient/vocab/steps"
	"github.com/ambientkit/ambientkit/revision"
)

// ownedTagMesh returns the mesh before and after tag prod moved from 1-30-3 to 1-31-4; the tag's
// objects were rendered by release istiod-1-30-3's revisionTags, so that release owns them.
func ownedTagMesh(owner *mesh.ReleaseRef, serviceOwner *mesh.ReleaseRef, chartVersion string) (before, after *mesh.Snapshot) {
	mk := func(rev string) *mesh.Snapshot {
		s := &mesh.Snapshot{
			Revisions: []mesh.Revision{
				{Name: "1-30-3", Namespace: "istio-system", Deployment: "istiod-1-30-3", Version: mesh.MustParseVersion("1.30.3"),
					Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1, ObservedCurrent: true, HelmRelease: "istiod-1-30-3"},
				{Name: "1-31-4", Namespace: "istio-system", Deployment: "istiod-1-31-4", Version: mesh.MustParseVersion("1.31.4"),
					Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1, ObservedCurrent: true, HelmRelease: "istiod-1-31-4"},
			},
			Tags: []mesh.Tag{{Name: "prod", Revision: rev, WebhookRevision: rev, ServiceRevision: rev,
				Webhook: "istio-revision-tag-prod", Service: "istiod-revision-tag-prod", ServiceNamespace: "istio-system",
				WebhookRelease: owner, ServiceRelease: serviceOwner}},
			HelmReleases: []mesh.HelmRelease{
				{Name: "istiod-1-30-3", Namespace: "istio-system", Chart: "istiod", ChartVersion: chartVersion, Revision: 3, Status: "deployed",
					Values: map[string]any{"revision": "1-30-3", "revisionTags": []any{"prod"}}},
				{Name: "istiod-1-31-4", Namespace: "istio-system", Chart: "istiod", ChartVersion: "1.31.4", Revision: 1, Status: "deployed",
					Values: map[string]any{"revision": "1-31-4"}},
			},
		}
		s.Normalize()
		return s
	}
	return mk("1-30-3"), mk("1-31-4")
}

var oldRelease = &mesh.ReleaseRef{Namespace: "istio-system", Name: "istiod-1-30-3"}

func planRemoval(t *testing.T, before, after *mesh.Snapshot, values map[string]map[string]any) *plan.Plan {
	t.Helper()
	p := plan.New(plan.Metadata{Name: "t", Operation: "upgrade", Fingerprint: before.Fingerprint()})
	b := steps.New(p, steps.Options{Values: values})
	revision.AddRemoval(b, before, after, revision.RemovalOptions{NewRevision: "1-31-4"})
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("invalid plan: %v", err)
	}
	return p
}

func stepIDs(p *plan.Plan) []string {
	var ids []string
	for _, s := range p.Steps {
		ids = append(ids, s.ID)
	}
	return ids
}

func TestRemovingAReleaseThatOwnsAMovedTagLeavesTheTagInPlace(t *testing.T) {
	before, after := ownedTagMesh(oldRelease, oldRelease, "1.30.3")
	p := planRemoval(t, before, after, nil)
	want := []string{"istiod/1-30-3/approve", "istiod/1-30-3/backup", "istiod/1-30-3/tags/prod/keep-webhook", "istiod/1-30-3/tags/prod/keep-service",
		"istiod/1-30-3/release-tags", "istiod/1-30-3/remove",
		"istiod/1-30-3/cleanup/lease/istio-gateway-deployment-1-30-3", "istiod/1-30-3/cleanup/lease/istio-gateway-status-leader-1-30-3"}
	if d := cmp.Diff(want, stepIDs(p)); d != "" {
		t.Fatalf("steps (-want +got):\n%s", d)
	}
	for _, st := range p.Steps[2:4] {
		meta := st.ApplyObject.Object["metadata"].(map[string]any)
		labels := meta["labels"].(map[string]any)
		if meta["annotations"].(map[string]any)["helm.sh/resource-policy"] != "keep" || labels[mesh.LabelRev] != "1-31-4" || labels[mesh.LabelTag] != "prod" {
			t.Errorf("%s: want the tag as it is (istio.io/rev=1-31-4) marked keep, got metadata %v", st.ID, meta)
		}
	}
	names := []string{p.Steps[2].ApplyObject.Ref().String(), p.Steps[3].ApplyObject.Ref().String()}
	if d := cmp.Diff([]string{"MutatingWebhookConfiguration istio-revision-tag-prod", "Service istio-system/istiod-revision-tag-prod"}, names); d != "" {
		t.Errorf("kept objects (-want +got):\n%s", d)
	}
	rel := p.Steps[4]
	if rel.HelmUpgrade == nil || rel.HelmUpgrade.Release != "istiod-1-30-3" || rel.HelmUpgrade.Chart.Version != "1.30.3" || rel.Rollback != nil {
		t.Fatalf("release-tags must upgrade istiod-1-30-3 at its own chart 1.30.3 with no rollback, got %+v", rel)
	}
	if v, ok := rel.HelmUpgrade.Values["revisionTags"]; !ok || v != nil {
		t.Errorf("release-tags must set revisionTags null, values %v", rel.HelmUpgrade.Values)
	}
	if rm := p.Steps[5]; rm.Blocked != "" || rm.HelmUninstall == nil {
		t.Errorf("the removal must go ahead as an uninstall, got %+v", rm)
	}
}

func TestRemovalStepsForTagsDependOnWhatTheReleaseOwns(t *testing.T) {
	tests := []struct {
		name         string
		webhookOwner *mesh.ReleaseRef
		serviceOwner *mesh.ReleaseRef
		chartVersion string
		values       map[string]map[string]any
		steps        []string // IDs between backup and remove
		blocked      bool     // the removal is blocked with TAG_OWNED_BY_OLD_RELEASE
	}{
		{name: "tags applied with helm template belong to no release and need nothing", chartVersion: "1.30.3"},
		{name: "a release that owns only the webhook configuration keeps only it", webhookOwner: oldRelease, chartVersion: "1.30.3",
			steps: []string{"istiod/1-30-3/tags/prod/keep-webhook", "istiod/1-30-3/release-tags"}},
		{name: "tags owned by another release need nothing", webhookOwner: &mesh.ReleaseRef{Namespace: "istio-system", Name: "tags"}, chartVersion: "1.30.3"},
		{name: "caller values that render the tags again in the old release block the removal", webhookOwner: oldRelease, serviceOwner: oldRelease,
			chartVersion: "1.30.3", values: map[string]map[string]any{"istiod": {"revisionTags": []any{"prod"}}}, blocked: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, after := ownedTagMesh(tc.webhookOwner, tc.serviceOwner, tc.chartVersion)
			p := planRemoval(t, before, after, tc.values)
			ids := stepIDs(p)
			last := slices.Index(ids, "istiod/1-30-3/remove")
			if last < 2 {
				t.Fatalf("no removal step after the backup: %v", ids)
			}
			if d := cmp.Diff(tc.steps, ids[2:last], cmpopts.EquateEmpty()); d != "" {
				t.Errorf("steps between backup and remove (-want +got):\n%s", d)
			}
			rm := p.Steps[last]
			var codes []plan.Code
			for _, f := range p.Findings {
				codes = append(codes, f.Code)
			}
			if tc.blocked != (rm.Blocked != "") || tc.blocked != cmp.Equal(codes, []plan.Code{plan.CodeTagOwnedByOldRelease}) {
				t.Errorf("blocked = %q, findings %v; want blocked %v", rm.Blocked, codes, tc.blocked)
			}
		})
	}
}
