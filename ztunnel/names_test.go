package ztunnel_test

import (
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ztunnel"
)

// setReleaseValue sets a top-level value of the named Helm release.
func setReleaseValue(s *mesh.Snapshot, release, key string, value any) {
	for i := range s.HelmReleases {
		if s.HelmReleases[i].Name == release {
			if s.HelmReleases[i].Values == nil {
				s.HelmReleases[i].Values = map[string]any{}
			}
			s.HelmReleases[i].Values[key] = value
		}
	}
}

func TestGreenMayShareBluesResourceNameOnlyWithoutOpenShiftsClusterRole(t *testing.T) {
	tests := []struct {
		name         string
		blue, green  map[string]any
		blueInferred bool
		want         string // "" allowed, else what the refusal says
	}{
		{name: "without platform=openshift nothing cluster-scoped is named: allowed", blue: map[string]any{"profile": "ambient"}},
		{name: "blue on openshift is refused", blue: map[string]any{"platform": "openshift"},
			want: `with platform=openshift the chart renders a cluster-scoped ClusterRole and ClusterRoleBinding named "ztunnel"`},
		{name: "global.platform counts: the chart flattens global", blue: map[string]any{"global": map[string]any{"platform": "openshift"}}, want: "platform=openshift"},
		{name: "green's own values set openshift: refused", blue: map[string]any{}, green: map[string]any{"platform": "openshift"}, want: "platform=openshift"},
		{name: "resourceScope namespace renders no ClusterRole even on openshift: allowed", blue: map[string]any{"platform": "openshift", "resourceScope": "namespace"}},
		{name: "another platform renders no ClusterRole: allowed", blue: map[string]any{"platform": "gke"}},
		{name: "blue's values unknown is refused: it cannot be told", blueInferred: true, want: "cannot be told"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ztunnel.ResourceNameCollision("ztunnel", tc.blue, tc.green, tc.blueInferred)
			switch {
			case tc.want == "" && got != "":
				t.Errorf("refused: %s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("got %q, want it to say %q", got, tc.want)
			}
		})
	}
}

func TestABlueGreenOffOpenShiftMayKeepTheResourceNameInItsOwnNamespace(t *testing.T) {
	s := karpenterMesh()
	p, err := ztunnel.BlueGreenZtunnel(s, ztunnel.BlueGreenOptions{Target: v("1.30.3"), Strategy: ztunnel.BlueGreen{ResourceName: "ztunnel"}})
	if err != nil && p == nil {
		t.Fatalf("BlueGreenZtunnel: %v", err)
	}
	st, ok := p.Step("ztunnel/bluegreen/install-green")
	if !ok {
		t.Fatalf("no install-green step: %v (%v)", ids(p), err)
	}
	if st.HelmInstall.Namespace != "ztunnel-green" || st.HelmInstall.Values["resourceName"] != "ztunnel" {
		t.Errorf("green installs as %s/%v, want ztunnel-green/ztunnel", st.HelmInstall.Namespace, st.HelmInstall.Values["resourceName"])
	}
}

func TestARenameNamesTheClusterRoleOnlyWhenTheChartRendersOne(t *testing.T) {
	for _, tc := range []struct {
		name, platform, want, not string
	}{
		{name: "off openshift a rename moves the DaemonSet and ServiceAccount only", want: "its DaemonSet and ServiceAccount from", not: "ClusterRole"},
		{name: "on openshift it moves the ClusterRole and its binding too", platform: "openshift", want: "ClusterRole and ClusterRoleBinding (platform=openshift)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy("1.30.3", 2)
			if tc.platform != "" {
				setReleaseValue(s, "ztunnel", "platform", tc.platform)
			}
			p := planZtunnel(t, s, ztunnel.UpgradeOptions{Target: mesh.MustParseVersion("1.31.4"), Strategy: ztunnel.InPlace{}},
				map[string]map[string]any{"ztunnel": {"resourceName": "ztunnel-v2"}})
			var msg string
			for _, f := range p.Findings {
				if f.Code == plan.CodeZtunnelUpgradeRenamesDaemonSet {
					msg = f.Message
				}
			}
			if !strings.Contains(msg, tc.want) || (tc.not != "" && strings.Contains(msg, tc.not)) {
				t.Errorf("rename finding %q: want %q%s", msg, tc.want, map[bool]string{true: ", without " + tc.not}[tc.not != ""])
			}
		})
	}
}
