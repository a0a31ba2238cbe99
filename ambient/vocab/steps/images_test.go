package steps

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

func TestEveryValueThatFixesAnImageIsMovedToTheChartsVersionOrRefused(t *testing.T) {
	v := mesh.MustParseVersion("1.31.4")
	tests := []struct {
		name   string
		chart  string
		values map[string]any
		want   map[string]any // the values afterwards
		moved  []plan.MovedValue
		stuck  []string // keys refused
	}{
		{name: "a mirrored registry's hub and tag: the tag moves, the hub stays", chart: "istiod",
			values: map[string]any{"hub": "mirror.corp/istio", "tag": "1.30.3"},
			want:   map[string]any{"hub": "mirror.corp/istio", "tag": "1.31.4"},
			moved:  []plan.MovedValue{{Key: "tag", From: "1.30.3", To: "1.31.4"}}},
		{name: "a variant is kept", chart: "ztunnel", values: map[string]any{"tag": "1.30.3-distroless"},
			want: map[string]any{"tag": "1.31.4-distroless"}, moved: []plan.MovedValue{{Key: "tag", From: "1.30.3-distroless", To: "1.31.4-distroless"}}},
		{name: "global.tag and the legacy pilot.tag of istiod both move", chart: "istiod",
			values: map[string]any{"global": map[string]any{"tag": "1.30.3"}, "pilot": map[string]any{"tag": "1.30.3"}},
			want:   map[string]any{"global": map[string]any{"tag": "1.31.4"}, "pilot": map[string]any{"tag": "1.31.4"}},
			moved:  []plan.MovedValue{{Key: "pilot.tag", From: "1.30.3", To: "1.31.4"}, {Key: "global.tag", From: "1.30.3", To: "1.31.4"}}},
		{name: "a whole proxy image for every sidecar moves its tag", chart: "istiod",
			values: map[string]any{"global": map[string]any{"proxy": map[string]any{"image": "mirror.corp:5000/istio/proxyv2:1.30.3"}}},
			want:   map[string]any{"global": map[string]any{"proxy": map[string]any{"image": "mirror.corp:5000/istio/proxyv2:1.31.4"}}},
			moved:  []plan.MovedValue{{Key: "global.proxy.image", From: "mirror.corp:5000/istio/proxyv2:1.30.3", To: "mirror.corp:5000/istio/proxyv2:1.31.4"}}},
		{name: "istio-cni's cni.image moves", chart: "cni", values: map[string]any{"cni": map[string]any{"image": "mirror/istio/install-cni:1.30.3"}},
			want:  map[string]any{"cni": map[string]any{"image": "mirror/istio/install-cni:1.31.4"}},
			moved: []plan.MovedValue{{Key: "cni.image", From: "mirror/istio/install-cni:1.30.3", To: "mirror/istio/install-cni:1.31.4"}}},
		{name: "a gateway's proxyImage annotation moves", chart: "gateway",
			values: map[string]any{"podAnnotations": map[string]any{"sidecar.istio.io/proxyImage": "mirror/proxyv2:1.30.3"}},
			want:   map[string]any{"podAnnotations": map[string]any{"sidecar.istio.io/proxyImage": "mirror/proxyv2:1.31.4"}},
			moved:  []plan.MovedValue{{Key: `podAnnotations.sidecar\.istio\.io/proxyImage`, From: "mirror/proxyv2:1.30.3", To: "mirror/proxyv2:1.31.4"}}},
		{name: "an image name without a registry fixes nothing", chart: "ztunnel", values: map[string]any{"image": "ztunnel", "tag": "1.31.4"},
			want: map[string]any{"image": "ztunnel", "tag": "1.31.4"}},
		{name: "a tag that names no release is refused", chart: "ztunnel", values: map[string]any{"tag": "latest"},
			want: map[string]any{"tag": "latest"}, stuck: []string{"tag"}},
		{name: "a custom build tag is refused", chart: "cni", values: map[string]any{"global": map[string]any{"tag": "1.30.3-corp.7"}},
			want: map[string]any{"global": map[string]any{"tag": "1.30.3-corp.7"}}, stuck: []string{"global.tag"}},
		{name: "a hub with a digest is refused", chart: "istiod", values: map[string]any{"global": map[string]any{"hub": "mirror/istio@sha256:abc"}},
			want: map[string]any{"global": map[string]any{"hub": "mirror/istio@sha256:abc"}}, stuck: []string{"global.hub"}},
		{name: "an image by digest is refused", chart: "istiod", values: map[string]any{"image": "mirror/istio/pilot@sha256:abc"},
			want: map[string]any{"image": "mirror/istio/pilot@sha256:abc"}, stuck: []string{"image"}},
		{name: "a whole image without a tag is refused", chart: "ztunnel", values: map[string]any{"image": "mirror/istio/ztunnel"},
			want: map[string]any{"image": "mirror/istio/ztunnel"}, stuck: []string{"image"}},
		{name: "the base chart runs no image", chart: "base", values: map[string]any{"global": map[string]any{"tag": "1.30.3"}},
			want: map[string]any{"global": map[string]any{"tag": "1.30.3"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			moved, stuck := moveImages(tc.chart, v, tc.values)
			if d := cmp.Diff(tc.want, tc.values); d != "" {
				t.Errorf("values (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.moved, moved); d != "" {
				t.Errorf("moved (-want +got):\n%s", d)
			}
			var keys []string
			for _, s := range stuck {
				keys = append(keys, s.key)
			}
			if d := cmp.Diff(tc.stuck, keys); d != "" {
				t.Errorf("refused (-want +got):\n%s", d)
			}
		})
	}
}

func TestAnImageTheCallerPassesForThePlanIsTakenAsGiven(t *testing.T) {
	v := mesh.MustParseVersion("1.31.4")
	for _, tc := range []struct {
		name    string
		current map[string]any
		caller  map[string]map[string]any
		refused bool
	}{
		{name: "the release's own digest is refused", current: map[string]any{"image": "mirror/ztunnel@sha256:old"}, refused: true},
		{name: "a digest the caller passes for the target is taken as given", current: map[string]any{"image": "mirror/ztunnel@sha256:old"},
			caller: map[string]map[string]any{"ztunnel": {"image": "mirror/ztunnel@sha256:new"}}},
		{name: "the caller dropping the value clears it", current: map[string]any{"tag": "latest"},
			caller: map[string]map[string]any{"ztunnel": {"tag": nil}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := plan.New(plan.Metadata{Name: "t"})
			b := New(p, Options{Values: tc.caller})
			b.ChartValues(tc.current, "ztunnel", "ztunnel", "istio-system", v, nil)
			refused := len(p.Findings) > 0
			if refused != tc.refused {
				t.Errorf("refused %v, want %v: %v", refused, tc.refused, p.Findings)
			}
		})
	}
}
