package ambient_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/knowledge/releases"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

var today = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

func TestComputeCompatibilityRules(t *testing.T) {
	v := mesh.MustParseVersion
	tests := []struct {
		name     string
		version  string
		mutate   func(s *mesh.Snapshot)
		opts     ambient.CompatibilityOptions
		want     plan.Code
		severity plan.Severity
		object   string // ObjectRef.String() of the finding, "" to skip
		absent   bool   // the code must not appear
	}{
		{name: "a healthy mesh checked as it runs has nothing that stops it", version: "1.30.3",
			want: plan.CodeZtunnelNotTrusted, absent: true},
		{name: "a data plane component newer than its control plane is blocking", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { meshtest.SetZtunnel(s, "1.31.0") },
			want:   plan.CodeZtunnelAheadOfControlPlane, severity: plan.Blocking, object: "DaemonSet istio-system/ztunnel"},
		{name: "sidecars newer than the revision that injected them are blocking", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) {
				for i := range s.Workloads {
					if s.Workloads[i].Name == "billing" {
						s.Workloads[i].ProxyVersions = []mesh.Version{v("1.31.1")}
					}
				}
			},
			want: plan.CodeSidecarAheadOfControlPlane, severity: plan.Blocking, object: "Namespace legacy"},
		{name: "sidecars two minors behind their control plane are waivable", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) {
				for i := range s.Workloads {
					if s.Workloads[i].Name == "billing" {
						s.Workloads[i].ProxyVersions = []mesh.Version{v("1.28.2")}
					}
				}
			},
			want: plan.CodeSidecarTooFarBehindControlPlane, severity: plan.Waivable, object: "Namespace legacy"},
		{name: "a gateway newer than its control plane is blocking", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { s.Gateways[0].Versions = []mesh.Version{v("1.31.0")} },
			want:   plan.CodeGatewayAheadOfControlPlane, severity: plan.Blocking, object: "Deployment istio-ingress/istio-ingress"},
		{name: "CNI one minor ahead of the control plane is blocking", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { meshtest.SetCNI(s, "1.31.0") },
			want:   plan.CodeCNIAheadOfControlPlane, severity: plan.Blocking, object: "DaemonSet istio-system/istio-cni-node"},
		{name: "CNI two minors behind the control plane is blocking", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { meshtest.SetCNI(s, "1.28.1") },
			want:   plan.CodeCNITooFarBehindControlPlane, severity: plan.Blocking, object: "DaemonSet istio-system/istio-cni-node"},
		{name: "ztunnel two minors behind the control plane is blocking", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { meshtest.SetZtunnel(s, "1.28.1") },
			want:   plan.CodeZtunnelTooFarBehindControlPlane, severity: plan.Blocking, object: "DaemonSet istio-system/ztunnel"},
		{name: "a target that would leave CNI two minors behind names the hop to chain through", version: "1.29.6",
			opts: ambient.CompatibilityOptions{Target: v("1.31.4")},
			want: plan.CodeDataPlaneWouldLagTarget, severity: plan.Blocking, object: "DaemonSet istio-system/istio-cni-node"},
		{name: "an in-place upgrade of two minors is blocking", version: "1.29.6",
			opts: ambient.CompatibilityOptions{Target: v("1.31.4"), Strategy: ambient.StrategyInPlace},
			want: plan.CodeInPlaceSkipsMinor, severity: plan.Blocking, object: "Deployment istio-system/istiod-1-29-6"},
		{name: "an in-place upgrade of one minor is allowed", version: "1.30.3",
			opts: ambient.CompatibilityOptions{Target: v("1.31.4"), Strategy: ambient.StrategyInPlace},
			want: plan.CodeInPlaceSkipsMinor, absent: true},
		{name: "a revision upgrade of three minors is blocking", version: "1.28.3",
			opts: ambient.CompatibilityOptions{Target: v("1.31.4")},
			want: plan.CodeRevisionUpgradeSkipsTooManyMinors, severity: plan.Blocking, object: "Deployment istio-system/istiod-1-28-3"},
		{name: "a revision upgrade of two minors is allowed for the control plane", version: "1.29.6",
			opts: ambient.CompatibilityOptions{Target: v("1.31.4")},
			want: plan.CodeRevisionUpgradeSkipsTooManyMinors, absent: true},
		{name: "a target older than the control plane is blocking", version: "1.30.3",
			opts: ambient.CompatibilityOptions{Target: v("1.29.6")},
			want: plan.CodeTargetOlderThanCurrent, severity: plan.Blocking},
		{name: "a target that does not support the cluster's Kubernetes is waivable", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { s.Cluster.KubernetesVersion = v("1.39.0") },
			opts:   ambient.CompatibilityOptions{Target: v("1.31.4")},
			want:   plan.CodeKubernetesUnsupportedByTarget, severity: plan.Waivable, object: "Cluster kubernetes"},
		{name: "a cluster below the target's minimum Kubernetes is blocking", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { s.Cluster.KubernetesVersion = v("1.30.2") },
			opts:   ambient.CompatibilityOptions{Target: v("1.31.4")},
			want:   plan.CodeKubernetesBelowTargetMinimum, severity: plan.Blocking},
		{name: "a control plane past its end of life is reported", version: "1.28.3",
			opts: ambient.CompatibilityOptions{Today: today},
			want: plan.CodeSourceEndOfLife, severity: plan.Info},
		{name: "a target past its end of life is waivable", version: "1.28.3",
			opts: ambient.CompatibilityOptions{Target: v("1.29.6"), Today: today},
			want: plan.CodeTargetEndOfLife, severity: plan.Waivable},
		{name: "without a date end of life is not checked and says so", version: "1.30.3",
			want: plan.CodeEndOfLifeNotChecked, severity: plan.Info},
		{name: "a tag pointing at a revision that does not exist is blocking", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { s.Tags[1].Revision = "1-29-0" },
			want:   plan.CodeTagRevisionMissing, severity: plan.Blocking, object: "MutatingWebhookConfiguration istio-revision-tag-prod"},
		{name: "a namespace labelled with an unknown revision is waivable", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { s.Namespaces[1].Labels[mesh.LabelRev] = "gone" },
			want:   plan.CodeNamespaceRevisionMissing, severity: plan.Waivable, object: "Namespace legacy"},
		{name: "a default revision without istiod is blocking", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { s.DefaultRevision = "1-28-0" },
			want:   plan.CodeDefaultRevisionMissing, severity: plan.Blocking},
		{name: "two ztunnels in one namespace with the same selector are blocking", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) {
				z := s.Ztunnels[0]
				z.Name, z.ServiceAccount = "ztunnel-blue", "ztunnel-blue"
				s.Ztunnels = append(s.Ztunnels, z)
				s.Revisions[0].TrustedZtunnelAccounts = append(s.Revisions[0].TrustedZtunnelAccounts, "istio-system/ztunnel-blue")
			},
			want: plan.CodeZtunnelSelectorOverlap, severity: plan.Blocking, object: "DaemonSet istio-system/ztunnel-blue"},
		{name: "two ztunnels in different namespaces do not overlap", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) {
				z := s.Ztunnels[0]
				z.Namespace = "ztunnel-green"
				s.Ztunnels = append(s.Ztunnels, z)
			},
			want: plan.CodeZtunnelSelectorOverlap, absent: true},
		{name: "a renamed ztunnel that istiod does not trust is blocking", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { s.Ztunnels[0].Name, s.Ztunnels[0].ServiceAccount = "ztunnel-v2", "ztunnel-v2" },
			want:   plan.CodeZtunnelNotTrusted, severity: plan.Blocking, object: "DaemonSet istio-system/ztunnel-v2"},
		{name: "a trust entry with no ztunnel behind it is reported", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) {
				s.Revisions[0].TrustedZtunnelAccounts = append(s.Revisions[0].TrustedZtunnelAccounts, "kube-system/ztunnel")
			},
			want: plan.CodeTrustedAccountWithoutZtunnel, severity: plan.Info},
		{name: "a renamed ztunnel before 1.25.1 needs a newer Istio", version: "1.25.0",
			mutate: func(s *mesh.Snapshot) {
				s.Ztunnels[0].Name, s.Ztunnels[0].ServiceAccount = "zt", "zt"
				s.Revisions[0].TrustedZtunnelAccounts = []string{"istio-system/zt"}
			},
			want: plan.CodeZtunnelRenameNeedsNewerIstio, severity: plan.Waivable},
		{name: "Gateway API CRDs older than the target needs are blocking when waypoints exist", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { s.GatewayAPI.BundleVersion = "v1.2.0" },
			opts:   ambient.CompatibilityOptions{Target: v("1.31.4")},
			want:   plan.CodeGatewayAPICRDsTooOld, severity: plan.Blocking, object: "CustomResourceDefinition gateways.gateway.networking.k8s.io"},
		{name: "missing Gateway API CRDs are reported when ambient is used", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { s.GatewayAPI = mesh.GatewayAPI{} },
			want:   plan.CodeGatewayAPICRDsMissing, severity: plan.Waivable},
		{name: "a snapshot without istiod is blocking", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { s.Revisions = nil },
			want:   plan.CodeIstiodMissing, severity: plan.Blocking},
		{name: "an istiod with unready replicas is blocking", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { s.Revisions[0].ReadyReplicas = 0 },
			want:   plan.CodeIstiodNotReady, severity: plan.Blocking, object: "Deployment istio-system/istiod-1-30-3"},
		{name: "an ambient node without a ready ztunnel is blocking", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { s.Ztunnels[0].Pods[0].Ready = false },
			want:   plan.CodeAmbientNodeWithoutReadyZtunnel, severity: plan.Blocking, object: "Node batch-1"},
		{name: "an ambient node without a ready CNI pod is blocking", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { s.CNI.Pods = s.CNI.Pods[1:] },
			want:   plan.CodeNodeWithoutCNI, severity: plan.Blocking, object: "Node batch-1"},
		{name: "a node tainted cni.istio.io/not-ready is waivable", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) {
				s.Nodes[0].Taints = []mesh.Taint{{Key: mesh.TaintCNINotReady, Value: "true", Effect: "NoSchedule"}}
			},
			want: plan.CodeNodeTaintedCNINotReady, severity: plan.Waivable, object: "Node batch-1"},
		{name: "ambient in use without istio-cni is blocking", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { s.CNI = nil },
			want:   plan.CodeCNIMissing, severity: plan.Blocking},
		{name: "pods that should be in ambient but are not redirected are waivable", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { s.Namespaces[2].Pods.AmbientMissing = 3 },
			want:   plan.CodeAmbientPodsNotRedirected, severity: plan.Waivable, object: "Namespace shop"},
		{name: "a namespace labelled for ambient and injection is waivable", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { s.Namespaces[2].Labels[mesh.LabelRev] = "prod" },
			want:   plan.CodeNamespaceSidecarAndAmbient, severity: plan.Waivable, object: "Namespace shop"},
		{name: "Istio CRDs without Helm ownership need adopting", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { s.CRDs[0].Labels = nil },
			want:   plan.CodeCRDOwnershipNeedsAdoption, severity: plan.Waivable},
		{name: "a component version unreadable from its image is waivable", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { s.CNI.Version = mesh.Version{}; s.CNI.Image = "reg/install-cni:latest" },
			want:   plan.CodeComponentVersionUnknown, severity: plan.Waivable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy(tc.version, 4)
			if tc.mutate != nil {
				tc.mutate(s)
				s.Normalize()
			}
			got, err := ambient.CompatibilityReport(s, tc.opts)
			if err != nil {
				t.Fatalf("ComputeCompatibility: %v", err)
			}
			var match *plan.Finding
			for i, f := range got.Findings {
				if f.Code == tc.want {
					match = &got.Findings[i]
					break
				}
			}
			if tc.absent {
				if match != nil {
					t.Fatalf("finding %s should not be there: %s", tc.want, match)
				}
				return
			}
			if match == nil {
				t.Fatalf("want finding %s, got %v", tc.want, plan.Codes(got.Findings))
			}
			if match.Severity != tc.severity {
				t.Errorf("severity = %s, want %s", match.Severity, tc.severity)
			}
			if tc.object != "" && match.Object.String() != tc.object {
				t.Errorf("object = %q, want %q", match.Object, tc.object)
			}
			if match.Message == "" || (match.Severity != plan.Info && match.Remedy == "") {
				t.Errorf("finding needs a message and a remedy: %+v", match)
			}
		})
	}
}

func TestHealthyMeshIsCompatibleWithNextMinor(t *testing.T) {
	s := meshtest.Healthy("1.30.3", 6)
	c, err := ambient.CompatibilityReport(s, ambient.CompatibilityOptions{Target: mesh.MustParseVersion("1.31.4"), Today: today})
	if err != nil {
		t.Fatal(err)
	}
	if !c.OK() {
		t.Fatalf("healthy mesh should be upgradable, stopping findings: %v", plan.Stopping(c.Findings))
	}
	if len(c.Nodes) != 6 {
		t.Fatalf("want a verdict per node, got %d", len(c.Nodes))
	}
	for _, n := range c.Nodes {
		if n.Status != ambient.StatusOK || n.Ztunnel.IsZero() || n.CNI.IsZero() {
			t.Errorf("node verdict %+v should be ok with versions", n)
		}
	}
	for _, comp := range c.Components {
		if comp.Status == ambient.StatusBlocked {
			t.Errorf("component %s blocked: %v", comp.Component, comp.Codes)
		}
	}
}

func TestNodeAndComponentVerdictsCarryTheirCodes(t *testing.T) {
	s := meshtest.Healthy("1.30.3", 4)
	s.Ztunnels[0].Pods[0].Ready = false
	meshtest.SetCNI(s, "1.31.0")
	c, err := ambient.CompatibilityReport(s, ambient.CompatibilityOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var node ambient.NodeVerdict
	for _, n := range c.Nodes {
		if n.Node == "batch-1" {
			node = n
		}
	}
	if node.Status != ambient.StatusBlocked || !contains(node.Codes, plan.CodeAmbientNodeWithoutReadyZtunnel) {
		t.Errorf("node batch-1 verdict = %+v, want blocked with %s", node, plan.CodeAmbientNodeWithoutReadyZtunnel)
	}
	var cni ambient.ComponentVerdict
	for _, comp := range c.Components {
		if comp.Component == "cni" {
			cni = comp
		}
	}
	if cni.Status != ambient.StatusBlocked || !contains(cni.Codes, plan.CodeCNIAheadOfControlPlane) {
		t.Errorf("cni verdict = %+v, want blocked with %s", cni, plan.CodeCNIAheadOfControlPlane)
	}
}

func TestWaiversApplyOnlyToWaivableFindings(t *testing.T) {
	s := meshtest.Healthy("1.30.3", 4)
	s.Namespaces[1].Labels[mesh.LabelRev] = "gone"
	meshtest.SetCNI(s, "1.31.0")
	s.Normalize()
	c, err := ambient.CompatibilityReport(s, ambient.CompatibilityOptions{Waive: []plan.Code{plan.CodeNamespaceRevisionMissing, plan.CodeCNIAheadOfControlPlane}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range c.Findings {
		switch f.Code {
		case plan.CodeNamespaceRevisionMissing:
			if !f.Waived || f.Stops() {
				t.Errorf("waivable finding should be waived: %+v", f)
			}
		case plan.CodeCNIAheadOfControlPlane:
			if f.Waived || !f.Stops() {
				t.Errorf("a blocking finding cannot be waived: %+v", f)
			}
		}
	}
}

func TestBadInputIsAnErrorNamingTheFix(t *testing.T) {
	s := meshtest.Healthy("1.30.3", 2)
	tests := []struct {
		name string
		snap *mesh.Snapshot
		opts ambient.CompatibilityOptions
		want error
		says string
	}{
		{name: "a nil snapshot is refused", snap: nil, want: ambient.ErrInvalidOptions, says: "observe"},
		{name: "an unknown waiver code is refused", snap: s, opts: ambient.CompatibilityOptions{Waive: []plan.Code{"NOT_A_CODE"}},
			want: ambient.ErrInvalidOptions, says: "NOT_A_CODE"},
		{name: "an unknown strategy is refused", snap: s, opts: ambient.CompatibilityOptions{Strategy: "yolo"},
			want: ambient.ErrInvalidOptions, says: "yolo"},
		{name: "a target minor the release data does not know is refused", snap: s,
			opts: ambient.CompatibilityOptions{Target: mesh.MustParseVersion("1.40.0")}, want: releases.ErrUnknownVersion, says: "releases.LoadFile"},
		{name: "a target patch newer than the release data knows is refused", snap: s,
			opts: ambient.CompatibilityOptions{Target: mesh.MustParseVersion("1.31.99")}, want: releases.ErrUnknownVersion, says: "1.31.4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ambient.CompatibilityReport(tc.snap, tc.opts)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q should mention %q", err, tc.says)
			}
		})
	}
}

func TestComputeCompatibilityIsDeterministic(t *testing.T) {
	s := meshtest.Healthy("1.29.6", 8)
	meshtest.SetCNI(s, "1.28.3")
	s.Ztunnels[0].Pods[3].Ready = false
	opts := ambient.CompatibilityOptions{Target: mesh.MustParseVersion("1.31.4"), Today: today}
	a, _ := ambient.CompatibilityReport(s, opts)
	for i := 0; i < 20; i++ {
		b, _ := ambient.CompatibilityReport(s, opts)
		if strings.Join(codesOf(a), ",") != strings.Join(codesOf(b), ",") {
			t.Fatalf("findings differ between runs:\n%v\n%v", codesOf(a), codesOf(b))
		}
	}
}

func codesOf(c *ambient.Compatibility) []string {
	var out []string
	for _, f := range c.Findings {
		out = append(out, string(f.Code)+" "+f.Object.String()+" "+f.Message)
	}
	return out
}

func contains(codes []plan.Code, c plan.Code) bool {
	for _, x := range codes {
		if x == c {
			return true
		}
	}
	return false
}

func TestReleasesWithoutRecordsAreWaivableOncePerNamespace(t *testing.T) {
	s := meshtest.Healthy("1.30.3", 2)
	for i := range s.HelmReleases {
		if h := &s.HelmReleases[i]; h.Chart == "cni" || h.Chart == "ztunnel" || h.Chart == "gateway" {
			h.Inferred, h.Revision, h.Status, h.Values = true, 0, "", nil
		}
	}
	c, err := ambient.CompatibilityReport(s, ambient.CompatibilityOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		Severity plan.Severity
		Object   string
		Related  []string
		Details  map[string]string
	}
	var found []got
	for _, f := range c.Findings {
		if f.Code != plan.CodeHelmReleaseValuesUnknown {
			continue
		}
		g := got{Severity: f.Severity, Object: f.Object.String(), Details: f.Details}
		for _, r := range f.Related {
			g.Related = append(g.Related, r.String())
		}
		found = append(found, g)
	}
	want := []got{
		{Severity: plan.Waivable, Object: "Namespace istio-ingress", Related: []string{"HelmRelease istio-ingress/istio-ingress"},
			Details: map[string]string{"namespace": "istio-ingress", "releases": "istio-ingress", "command": "kubectl get secrets -n istio-ingress -l owner=helm -o yaml"}},
		{Severity: plan.Waivable, Object: "Namespace istio-system", Related: []string{"HelmRelease istio-system/istio-cni", "HelmRelease istio-system/ztunnel"},
			Details: map[string]string{"namespace": "istio-system", "releases": "istio-cni,ztunnel", "command": "kubectl get secrets -n istio-system -l owner=helm -o yaml"}},
	}
	if d := cmp.Diff(want, found); d != "" {
		t.Errorf("%s findings (-want +got):\n%s", plan.CodeHelmReleaseValuesUnknown, d)
	}
	// The plan is made, and runs once the caller waives the code.
	for waive, runnable := range map[bool]bool{false: false, true: true} {
		opts := ambient.UpgradeOptions{Target: v("1.31.4"), Today: today}
		if waive {
			opts.Waive = []plan.Code{plan.CodeHelmReleaseValuesUnknown}
		}
		p, err := ambient.PlanUpgrade(s, opts)
		if err != nil {
			t.Fatalf("PlanUpgrade (waive %v): %v", waive, err)
		}
		if p.Runnable() != runnable {
			t.Errorf("waive %v: runnable %v, want %v (stopping: %v)", waive, p.Runnable(), runnable, plan.Codes(plan.Stopping(p.Findings)))
		}
	}
}

func TestAnEstimateThatDecidesAFindingSaysSo(t *testing.T) {
	data := releases.Default()
	source := func(minor string, f releases.Field) string {
		m, ok := data.Minor(mesh.MustParseVersion(minor + ".0"))
		if !ok || !m.IsEstimated(f) {
			t.Fatalf("the embedded data no longer estimates %s of %s; pick another case", f, minor)
		}
		return m.Source(f)
	}
	type est struct{ Object, Minor, Field, Decided, Source string }
	tests := []struct {
		name    string
		version string
		mutate  func(*mesh.Snapshot)
		opts    ambient.CompatibilityOptions
		want    []est
	}{
		{name: "an estimated supported range that puts the cluster above it is reported", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { s.Cluster.KubernetesVersion = v("1.39.0") },
			opts:   ambient.CompatibilityOptions{Target: v("1.31.4")},
			want:   []est{{"ReleaseData 1.31/kubernetes", "1.31", "kubernetes", string(plan.CodeKubernetesUnsupportedByTarget), source("1.31", releases.FieldKubernetes)}}},
		{name: "an estimated minimum Kubernetes that blocks the target is reported", version: "1.31.4",
			mutate: func(s *mesh.Snapshot) { s.Cluster.KubernetesVersion = v("1.31.0") },
			opts:   ambient.CompatibilityOptions{Target: v("1.32.0")},
			want:   []est{{"ReleaseData 1.32/minKubernetes", "1.32", "minKubernetes", string(plan.CodeKubernetesBelowTargetMinimum), source("1.32", releases.FieldMinKubernetes)}}},
		{name: "an estimated Gateway API version that finds the CRDs too old is reported", version: "1.30.3",
			mutate: func(s *mesh.Snapshot) { s.GatewayAPI.BundleVersion = "v1.4.0" },
			opts:   ambient.CompatibilityOptions{Target: v("1.31.4")},
			want:   []est{{"ReleaseData 1.31/gatewayAPI", "1.31", "gatewayAPI", string(plan.CodeGatewayAPICRDsTooOld), source("1.31", releases.FieldGatewayAPI)}}},
		{name: "an end of life derived from an estimated release date is reported", version: "1.30.3",
			opts: ambient.CompatibilityOptions{Today: time.Date(2027, 1, 5, 0, 0, 0, 0, time.UTC)},
			want: []est{{"ReleaseData 1.32/released", "1.32", "released", string(plan.CodeSourceEndOfLife), source("1.32", releases.FieldReleased)}}},
		{name: "an estimate that decides nothing is not reported", version: "1.30.3",
			opts: ambient.CompatibilityOptions{Target: v("1.31.4"), Today: today}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy(tc.version, 2)
			if tc.mutate != nil {
				tc.mutate(s)
			}
			c, err := ambient.CompatibilityReport(s, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []est
			for _, f := range c.Findings {
				if f.Code == plan.CodeReleaseDataEstimated {
					if f.Severity != plan.Info {
						t.Errorf("%s must be info, got %s", f.Code, f.Severity)
					}
					got = append(got, est{f.Object.String(), f.Details["minor"], f.Details["field"], f.Details["decided"], f.Details["source"]})
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("estimates (-want +got):\n%s", d)
			}
		})
	}
}

func TestAChainedHopOnAnEstimatedPatchListSaysSo(t *testing.T) {
	p, err := ambient.PlanUpgrade(meshtest.Healthy("1.29.6", 2), ambient.UpgradeOptions{Target: v("1.31.4"), Today: today})
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]string
	for _, f := range p.Findings {
		if f.Code == plan.CodeReleaseDataEstimated && f.Details["field"] == string(releases.FieldPatches) {
			got = append(got, f.Details)
		}
	}
	m, _ := releases.Default().Minor(v("1.30.0"))
	want := []map[string]string{{"minor": "1.30", "field": "patches", "decided": "hop 1.30.8", "source": m.Source(releases.FieldPatches)}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("hop estimates (-want +got):\n%s", d)
	}
}

// indexServing is a Helm repository index whose four ambient charts serve exactly the versions.
func indexServing(versions ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n")
	for _, chart := range releases.DefaultCharts() {
		b.WriteString("  " + chart + ":\n")
		for _, ver := range versions {
			b.WriteString("  - name: " + chart + "\n    version: " + ver + "\n    urls: [https://charts.example/" + chart + "-" + ver + ".tgz]\n")
		}
	}
	return b.String()
}

func TestARunningVersionTheIndexNoLongerServesIsStillKnown(t *testing.T) {
	data, err := releases.FromHelmIndex(strings.NewReader(indexServing("1.30.8", "1.31.4")), releases.IndexOptions{Name: "index.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		version string
		newer   []string // objects with VERSION_NEWER_THAN_RELEASE_DATA
	}{
		{name: "1.30.3 is older than the newest patch the data knows, though the index serves only 1.30.8", version: "1.30.3"},
		{name: "1.30.9 is newer than anything known", version: "1.30.9",
			newer: []string{"Deployment istio-system/istiod-1-30-9"}}, // once per version
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ambient.CompatibilityReport(meshtest.Healthy(tc.version, 2), ambient.CompatibilityOptions{Releases: data})
			if err != nil {
				t.Fatal(err)
			}
			var newer []string
			for _, f := range c.Findings {
				if f.Code == plan.CodeVersionNewerThanReleaseData {
					newer = append(newer, f.Object.String())
				}
			}
			if d := cmp.Diff(tc.newer, newer); d != "" {
				t.Errorf("%s (-want +got):\n%s", plan.CodeVersionNewerThanReleaseData, d)
			}
		})
	}
}
