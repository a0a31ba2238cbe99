package ambient_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/runbook"
)

// pinImages sets the values a mirrored-registry install passes (--set hub=... --set tag=<version>)
// on every release of the mesh, the way each chart spells them.
func pinImages(s *mesh.Snapshot, version string) {
	for i := range s.HelmReleases {
		h := &s.HelmReleases[i]
		switch h.Chart {
		case "istiod":
			h.Values["hub"], h.Values["tag"] = "mirror.corp/istio", version
			h.Values["global"] = map[string]any{"hub": "mirror.corp/istio", "tag": version}
		case "cni":
			h.Values["global"] = map[string]any{"hub": "mirror.corp/istio", "tag": version + "-distroless"}
		case "ztunnel":
			h.Values["hub"], h.Values["tag"] = "mirror.corp/istio", version
		case "gateway":
			h.Values["podAnnotations"] = map[string]any{"sidecar.istio.io/proxyImage": "mirror.corp/istio/proxyv2:" + version}
		}
	}
}

// imageVersions returns every value of a step's Helm values that names an Istio release (a bare tag
// or an image reference), by key.
func imageVersions(prefix string, values map[string]any, out map[string]mesh.Version) {
	for k, x := range values {
		switch x := x.(type) {
		case map[string]any:
			imageVersions(prefix+k+".", x, out)
		case string:
			if v, err := mesh.VersionFromImageTag(x); err == nil {
				out[prefix+k] = v
			}
		}
	}
}

func TestAReleasePinnedToItsImagesIsInstalledWithTheTargetsImages(t *testing.T) {
	tests := []struct {
		name    string
		opts    ambient.UpgradeOptions
		release string // the release whose move "What changes" must name
		moved   string
	}{
		{name: "a revision upgrade installs the new istiod with the target's tag, not the copied one",
			opts: ambient.UpgradeOptions{Target: v("1.31.4")}, release: "istiod-1-31-4", moved: "install (tag 1.30.3 → 1.31.4, global.tag 1.30.3 → 1.31.4)"},
		{name: "an in-place upgrade moves istiod's tag",
			opts: ambient.UpgradeOptions{Target: v("1.31.4"), Strategy: ambient.StrategyInPlace}, release: "istiod-1-30-3", moved: "tag 1.30.3 → 1.31.4"},
		{name: "istio-cni keeps its variant on the target",
			opts: ambient.UpgradeOptions{Target: v("1.31.4")}, release: "istio-cni", moved: "global.tag 1.30.3-distroless → 1.31.4-distroless"},
		{name: "ztunnel node by node runs the target's image",
			opts: ambient.UpgradeOptions{Target: v("1.31.4")}, release: "ztunnel", moved: "tag 1.30.3 → 1.31.4"},
		{name: "the green ztunnel of a blue-green is installed with the target's image",
			opts:    ambient.UpgradeOptions{Target: v("1.31.4"), Ztunnel: ambient.ZtunnelBlueGreen{Capacity: ambient.ZtunnelGreenCapacity{NodePools: []string{"general", "batch"}}}},
			release: "ztunnel-green", moved: "install (tag 1.30.3 → 1.31.4)"},
		{name: "a gateway's proxy image annotation follows",
			opts: ambient.UpgradeOptions{Target: v("1.31.4")}, release: "istio-ingress", moved: `podAnnotations.sidecar\.istio\.io/proxyImage mirror.corp/istio/proxyv2:1.30.3 → mirror.corp/istio/proxyv2:1.31.4`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy("1.30.3", 4)
			s.NodePools = []mesh.NodePool{{Name: "general"}, {Name: "batch"}}
			pinImages(s, "1.30.3")
			tc.opts.Waive = []plan.Code{plan.CodePDBBlocksDrain}
			p, err := ambient.PlanUpgrade(s, tc.opts)
			if err != nil {
				t.Fatalf("PlanUpgrade: %v", err)
			}
			for _, st := range p.Steps {
				h := st.HelmInstall
				if h == nil {
					h = st.HelmUpgrade
				}
				if h == nil {
					continue
				}
				found := map[string]mesh.Version{}
				imageVersions("", h.Values, found)
				for key, got := range found {
					if got.String() != h.Chart.Version {
						t.Errorf("step %s installs chart %s %s with %s naming %s", st.ID, h.Chart.Name, h.Chart.Version, key, got)
					}
				}
			}
			var md strings.Builder
			if err := runbook.Render(&md, p); err != nil {
				t.Fatal(err)
			}
			var row string
			for _, l := range strings.Split(md.String(), "\n") {
				if strings.HasPrefix(l, "| Helm release ") && strings.Contains(l, "/"+tc.release+" (chart") {
					row = l
				}
			}
			if !strings.Contains(row, tc.moved) {
				t.Errorf("What changes row %q does not say %q", row, tc.moved)
			}
		})
	}
}

func TestAPinnedImageThePlanCannotMoveBlocksTheUpgradeNamingTheValue(t *testing.T) {
	s := meshtest.Healthy("1.30.3", 2)
	for i := range s.HelmReleases {
		if s.HelmReleases[i].Chart == "ztunnel" {
			s.HelmReleases[i].Values["image"] = "mirror.corp/istio/ztunnel@sha256:0123"
		}
	}
	p, err := ambient.PlanUpgrade(s, ambient.UpgradeOptions{Target: v("1.31.4"), Waive: []plan.Code{plan.CodePDBBlocksDrain}})
	if !errors.Is(err, plan.ErrBlocked) {
		t.Fatalf("err = %v, want ErrBlocked", err)
	}
	var got []plan.Finding
	for _, f := range p.Findings {
		if f.Code == plan.CodeHelmValuePinsVersion {
			got = append(got, f)
		}
	}
	if len(got) == 0 {
		t.Fatalf("no %s: %v", plan.CodeHelmValuePinsVersion, plan.Codes(p.Findings))
	}
	f := got[0]
	if f.Severity != plan.Blocking || f.Details["release"] != "ztunnel" || f.Details["key"] != "image" || f.Details["value"] != "mirror.corp/istio/ztunnel@sha256:0123" ||
		f.Details["chartVersion"] != "1.31.4" {
		t.Errorf("finding %s details %v", f, f.Details)
	}
}
