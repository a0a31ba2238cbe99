package ambient_test

import (
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/knowledge/advisories"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh/meshtest"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

func sidecarModeCNI(s *mesh.Snapshot) { s.CNI.Config["AMBIENT_ENABLED"] = "false" }

func untaintController(name string) func(s *mesh.Snapshot) {
	return func(s *mesh.Snapshot) {
		s.Revisions[0].Settings = map[string]string{mesh.EnvUntaintControllers: "true", mesh.EnvUntaintTaintName: name}
		s.Nodes[0].Taints = []mesh.Taint{{Key: name, Effect: "NoSchedule"}}
	}
}

func largeMeshOf(pods int) func(s *mesh.Snapshot) {
	return func(s *mesh.Snapshot) {
		for i := range s.Namespaces {
			if s.Namespaces[i].Name == "shop" {
				s.Namespaces[i].Pods.Total = pods
			}
		}
	}
}

// TestAdvisoriesReachTheGate: the gate names each advisory that bites a running or the target
// version, with the way out, and the two advisories that change what a rule reads (the untaint
// taint name, istiod's gRPC limit) change the rule.
func TestAdvisoriesReachTheGate(t *testing.T) {
	v := mesh.MustParseVersion
	tests := []struct {
		name     string
		version  string
		target   string
		ops      []advisories.When
		mutate   func(s *mesh.Snapshot)
		want     plan.Code
		severity plan.Severity
		object   string
		says     []string
		details  map[string]string
		absent   bool
	}{
		{name: "a running sidecar-mode CNI with the reboot deadlock, checked for node reboots, is named with the newest patch without it",
			version: "1.30.3", ops: []advisories.When{advisories.NodeReboot}, mutate: sidecarModeCNI,
			want: plan.CodeAdvisoryAffectsRunning, severity: plan.Info, object: "DaemonSet istio-system/istio-cni-node",
			says:    []string{"istio#60668", "running cni", "1.30.3", "newest 1.30 patch it does not affect is 1.30.8", "https://github.com/istio/istio/issues/60668"},
			details: map[string]string{"advisory": "istio#60668", "newestUnaffected": "1.30.8"}},
		{name: "an upgrade restarts the CNI into the target, so the running CNI's deadlock on restart is not named",
			version: "1.30.3", target: "1.31.4", mutate: sidecarModeCNI, want: plan.CodeAdvisoryAffectsRunning, absent: true, details: map[string]string{"advisory": "istio#60668"}},
		{name: "a CNI in ambient mode is not affected by the sidecar-mode deadlock",
			version: "1.30.3", ops: []advisories.When{advisories.NodeReboot}, want: plan.CodeAdvisoryAffectsRunning, absent: true, details: map[string]string{"advisory": "istio#60668"}},
		{name: "a target with the deadlock is waivable and names the patch to choose instead",
			version: "1.29.6", target: "1.30.2", mutate: sidecarModeCNI,
			want: plan.CodeAdvisoryAffectsTarget, severity: plan.Waivable, object: "DaemonSet istio-system/istio-cni-node",
			says:    []string{"istio#60668", "target cni", "1.30.2", "1.30.8"},
			details: map[string]string{"advisory": "istio#60668", "version": "1.30.2", "newestUnaffected": "1.30.8"}},
		{name: "a node with the custom taint istiod 1.30.3 is told to remove is not ready",
			version: "1.30.3", mutate: untaintController("example.com/cni-not-ready"),
			want: plan.CodeNodeTaintedCNINotReady, severity: plan.Waivable, object: "Node batch-1",
			says:    []string{"example.com/cni-not-ready", mesh.EnvUntaintTaintName},
			details: map[string]string{"taint": "example.com/cni-not-ready"}},
		{name: "istiod older than 1.30.3 ignores the taint name, so a node with that taint is not judged by it",
			version: "1.30.2", mutate: untaintController("example.com/cni-not-ready"),
			want: plan.CodeNodeTaintedCNINotReady, absent: true},
		{name: "a mesh past 40,000 workloads whose target raises the reconnect request needs a larger gRPC limit",
			version: "1.30.3", target: "1.31.4", mutate: largeMeshOf(45000),
			want: plan.CodeIstiodGRPCLimitTooLow, severity: plan.Waivable, object: "Deployment istio-system/istiod-1-30-3",
			says:    []string{"at least 450", "1.31.4", "ztunnel#1966", "4194304 bytes"},
			details: map[string]string{"need": "10485760", "limit": "4194304"}},
		{name: "a limit raised past the estimate is enough",
			version: "1.30.3", target: "1.31.4",
			mutate: func(s *mesh.Snapshot) {
				largeMeshOf(45000)(s)
				s.Revisions[0].Settings = map[string]string{mesh.EnvMaxRecvMsgSize: "33554432"}
			},
			want: plan.CodeIstiodGRPCLimitTooLow, absent: true},
		{name: "a limit set from a Secret cannot be judged, so the finding says so",
			version: "1.30.3", target: "1.31.4",
			mutate: func(s *mesh.Snapshot) {
				largeMeshOf(45000)(s)
				s.Revisions[0].UnknownSettings = []string{mesh.EnvMaxRecvMsgSize}
			},
			want: plan.CodeIstiodGRPCLimitTooLow, severity: plan.Waivable, says: []string{"cannot read"}},
		{name: "a small mesh needs no larger limit",
			version: "1.30.3", target: "1.31.4", want: plan.CodeIstiodGRPCLimitTooLow, absent: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := meshtest.Healthy(tc.version, 4)
			if tc.mutate != nil {
				tc.mutate(s)
			}
			s.Normalize()
			opts := ambient.CompatibilityOptions{Operations: tc.ops}
			if tc.target != "" {
				opts.Target = v(tc.target)
			}
			got, err := ambient.CompatibilityReport(s, opts)
			if err != nil {
				t.Fatal(err)
			}
			var match *plan.Finding
			for i, f := range got.Findings {
				if f.Code == tc.want && (tc.details["advisory"] == "" || f.Details["advisory"] == tc.details["advisory"]) &&
					(tc.details["taint"] == "" || f.Details["taint"] == tc.details["taint"]) {
					match = &got.Findings[i]
					break
				}
			}
			if tc.absent {
				for _, f := range got.Findings {
					if f.Code == tc.want && (tc.want != plan.CodeNodeTaintedCNINotReady || f.Details["taint"] != mesh.TaintCNINotReady) &&
						(tc.details["advisory"] == "" || f.Details["advisory"] == tc.details["advisory"]) {
						t.Fatalf("finding %s should not be there: %s", tc.want, f)
					}
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
			for _, w := range tc.says {
				if !strings.Contains(match.Message, w) {
					t.Errorf("message should say %q: %s", w, match.Message)
				}
			}
			for k, want := range tc.details {
				if match.Details[k] != want {
					t.Errorf("details[%s] = %q, want %q", k, match.Details[k], want)
				}
			}
			if match.Remedy == "" {
				t.Errorf("no remedy: %+v", match)
			}
		})
	}
}

// TestADefaultValidatorLeftBehindIsDeletedWithABackup: advisory istio#60537. A validator naming a
// revision that is gone, which no base release renders, gets the exact backup-and-delete commands;
// one the base chart renders is fixed with helm.
func TestADefaultValidatorLeftBehindIsDeletedWithABackup(t *testing.T) {
	for _, helmOwned := range []bool{false, true} {
		s := meshtest.Healthy("1.30.3", 2)
		s.DefaultRevision = "1-29-6"
		var tags []mesh.Tag
		for _, tg := range s.Tags {
			if tg.Name != "default" {
				tags = append(tags, tg)
			}
		}
		s.Tags = tags
		for i := range s.HelmReleases {
			if s.HelmReleases[i].Chart == "base" {
				if helmOwned {
					s.HelmReleases[i].Values["defaultRevision"] = "1-29-6"
				} else {
					s.HelmReleases[i].Values = map[string]any{}
				}
			}
		}
		s.Normalize()
		got, err := ambient.CompatibilityReport(s, ambient.CompatibilityOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var f *plan.Finding
		for i := range got.Findings {
			if got.Findings[i].Code == plan.CodeDefaultRevisionMissing {
				f = &got.Findings[i]
			}
		}
		if f == nil {
			t.Fatalf("helm-owned=%v: no %s in %v", helmOwned, plan.CodeDefaultRevisionMissing, plan.Codes(got.Findings))
		}
		want := []string{"kubectl get validatingwebhookconfiguration istiod-default-validator -o yaml >", "kubectl delete validatingwebhookconfiguration istiod-default-validator"}
		if helmOwned {
			want = []string{"helm upgrade istio-base istio/base -n istio-system"}
		}
		for _, w := range want {
			if !strings.Contains(f.Remedy, w) {
				t.Errorf("helm-owned=%v: remedy should say %q: %s", helmOwned, w, f.Remedy)
			}
		}
		if (f.Details["advisory"] == "istio#60537") == helmOwned {
			t.Errorf("helm-owned=%v: details %v", helmOwned, f.Details)
		}
	}
}
