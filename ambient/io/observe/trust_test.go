package observe_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// istiodWithEnv renders an istiod Deployment whose discovery container has the given env entries
// (YAML flow mappings, one per line) and optional envFrom entries.
func istiodWithEnv(env []string, envFrom ...string) string {
	var b strings.Builder
	b.WriteString(`apiVersion: apps/v1
kind: Deployment
metadata: {name: istiod, namespace: istio-system}
spec:
  template:
    metadata: {labels: {app: istiod}}
    spec:
      containers:
      - name: discovery
        image: docker.io/istio/pilot:1.30.3
`)
	if len(env) > 0 {
		b.WriteString("        env:\n")
		for _, e := range env {
			fmt.Fprintf(&b, "        - %s\n", e)
		}
	}
	if len(envFrom) > 0 {
		b.WriteString("        envFrom:\n")
		for _, e := range envFrom {
			fmt.Fprintf(&b, "        - %s\n", e)
		}
	}
	return b.String()
}

func TestTrustedAccountsAreReadAsTheKubeletAndIstiodReadThem(t *testing.T) {
	tests := []struct {
		name        string
		env         []string
		envFrom     []string
		want        []string
		wantUnknown bool
		notTrusted  string // an account that must not be in the list
	}{
		{name: "a space after the comma is part of the namespace, so the second account is not trusted",
			env:  []string{`{name: CA_TRUSTED_NODE_ACCOUNTS, value: "istio-system/ztunnel, istio-system/ztunnel-green"}`},
			want: []string{"istio-system/ztunnel", " istio-system/ztunnel-green"}, notTrusted: "istio-system/ztunnel-green"},
		{name: "trailing spaces stay in the service account name",
			env:  []string{`{name: CA_TRUSTED_NODE_ACCOUNTS, value: "istio-system/ztunnel "}`},
			want: []string{"istio-system/ztunnel "}, notTrusted: "istio-system/ztunnel"},
		{name: "empty entries from doubled and trailing commas are ignored",
			env:  []string{`{name: CA_TRUSTED_NODE_ACCOUNTS, value: ",istio-system/ztunnel,,kube-system/ztunnel,"}`},
			want: []string{"istio-system/ztunnel", "kube-system/ztunnel"}},
		{name: "an entry without a slash is ignored",
			env:  []string{`{name: CA_TRUSTED_NODE_ACCOUNTS, value: "ztunnel,istio-system/ztunnel"}`},
			want: []string{"istio-system/ztunnel"}, notTrusted: "ztunnel"},
		{name: "only the first slash separates namespace from service account",
			env:  []string{`{name: CA_TRUSTED_NODE_ACCOUNTS, value: "istio-system/ztunnel/extra"}`},
			want: []string{"istio-system/ztunnel/extra"}},
		{name: "a duplicated account is listed once, as in istiod's set",
			env:  []string{`{name: CA_TRUSTED_NODE_ACCOUNTS, value: "istio-system/ztunnel,istio-system/ztunnel"}`},
			want: []string{"istio-system/ztunnel"}},
		{name: "an empty value trusts no account and is known",
			env: []string{`{name: CA_TRUSTED_NODE_ACCOUNTS, value: ""}`}},
		{name: "an unset variable trusts no account and is known"},
		{name: "of a variable listed twice the last entry counts",
			env: []string{`{name: CA_TRUSTED_NODE_ACCOUNTS, value: "istio-system/ztunnel"}`,
				`{name: CA_TRUSTED_NODE_ACCOUNTS, value: "istio-system/ztunnel-green"}`},
			want: []string{"istio-system/ztunnel-green"}, notTrusted: "istio-system/ztunnel"},
		{name: "a literal followed by a valueFrom entry of the same name is unknown",
			env: []string{`{name: CA_TRUSTED_NODE_ACCOUNTS, value: "istio-system/ztunnel"}`,
				`{name: CA_TRUSTED_NODE_ACCOUNTS, valueFrom: {configMapKeyRef: {name: trust, key: accounts}}}`},
			wantUnknown: true, notTrusted: "istio-system/ztunnel"},
		{name: "a valueFrom entry followed by a literal of the same name is the literal",
			env: []string{`{name: CA_TRUSTED_NODE_ACCOUNTS, valueFrom: {secretKeyRef: {name: trust, key: accounts}}}`,
				`{name: CA_TRUSTED_NODE_ACCOUNTS, value: "istio-system/ztunnel"}`},
			want: []string{"istio-system/ztunnel"}},
		{name: "a reference to an earlier literal variable is expanded",
			env: []string{`{name: ZT_NS, value: istio-system}`,
				`{name: CA_TRUSTED_NODE_ACCOUNTS, value: "$(ZT_NS)/ztunnel"}`},
			want: []string{"istio-system/ztunnel"}},
		{name: "a reference to a variable set from the downward API is unknown",
			env: []string{`{name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}`,
				`{name: CA_TRUSTED_NODE_ACCOUNTS, value: "$(POD_NAMESPACE)/ztunnel"}`},
			wantUnknown: true},
		{name: "a reference to a variable declared only later is unknown",
			env:         []string{`{name: CA_TRUSTED_NODE_ACCOUNTS, value: "$(ZT_NS)/ztunnel"}`, `{name: ZT_NS, value: istio-system}`},
			wantUnknown: true},
		{name: "a doubled dollar is a literal dollar, not a reference",
			env:  []string{`{name: CA_TRUSTED_NODE_ACCOUNTS, value: "$$(ZT_NS)/ztunnel"}`},
			want: []string{"$(ZT_NS)/ztunnel"}},
		{name: "a variable an envFrom ConfigMap may set is unknown",
			envFrom: []string{`{configMapRef: {name: istiod-env}}`}, wantUnknown: true},
		{name: "an envFrom prefix that cannot produce the name leaves it unset",
			envFrom: []string{`{prefix: EXTRA_, secretRef: {name: istiod-env}}`}},
		{name: "an env entry overrides whatever envFrom sets",
			env:     []string{`{name: CA_TRUSTED_NODE_ACCOUNTS, value: "istio-system/ztunnel"}`},
			envFrom: []string{`{configMapRef: {name: istiod-env}}`},
			want:    []string{"istio-system/ztunnel"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustObserve(t, istiodWithEnv(tt.env, tt.envFrom...))
			if len(s.Revisions) != 1 {
				t.Fatalf("revisions = %d, want 1", len(s.Revisions))
			}
			r := s.Revisions[0]
			want := slices.Clone(tt.want)
			slices.Sort(want) // the snapshot is normalised
			if d := cmp.Diff(want, r.TrustedZtunnelAccounts); d != "" {
				t.Errorf("TrustedZtunnelAccounts (-want +got):\n%s", d)
			}
			if r.TrustedAccountsUnknown != tt.wantUnknown {
				t.Errorf("TrustedAccountsUnknown = %v, want %v", r.TrustedAccountsUnknown, tt.wantUnknown)
			}
			if tt.notTrusted != "" && slices.Contains(r.TrustedZtunnelAccounts, tt.notTrusted) {
				t.Errorf("%q is trusted, but istiod would not trust it", tt.notTrusted)
			}
		})
	}
}

func TestIstiodEnvironmentFollowsTheKubelet(t *testing.T) {
	tests := []struct {
		name        string
		env         []string
		wantAmbient bool
	}{
		{"PILOT_ENABLE_AMBIENT set to true and then false is false",
			[]string{`{name: PILOT_ENABLE_AMBIENT, value: "true"}`, `{name: PILOT_ENABLE_AMBIENT, value: "false"}`}, false},
		{"PILOT_ENABLE_AMBIENT set to false and then true is true",
			[]string{`{name: PILOT_ENABLE_AMBIENT, value: "false"}`, `{name: PILOT_ENABLE_AMBIENT, value: "true"}`}, true},
		{"PILOT_ENABLE_AMBIENT from a ConfigMap is not known to be true",
			[]string{`{name: PILOT_ENABLE_AMBIENT, valueFrom: {configMapKeyRef: {name: istiod-env, key: ambient}}}`}, false},
		{"PILOT_ENABLE_AMBIENT expanded from an earlier literal is read",
			[]string{`{name: AMBIENT_ON, value: "true"}`, `{name: PILOT_ENABLE_AMBIENT, value: "$(AMBIENT_ON)"}`}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustObserve(t, istiodWithEnv(tt.env))
			if got := s.Revisions[0].Ambient; got != tt.wantAmbient {
				t.Errorf("Ambient = %v, want %v", got, tt.wantAmbient)
			}
		})
	}
}

// TestIstiodSettingsRulesReadAreObserved: the untaint controller's variables (as the istiod chart
// renders them with taint.enabled, istio/istio@eed52ebb66ad
// manifests/charts/istio-control/istio-discovery/templates/deployment.yaml) and the gRPC limit
// reach Revision.Settings; one from a Secret is named unknown, one unset is absent.
func TestIstiodSettingsRulesReadAreObserved(t *testing.T) {
	s := mustObserve(t, istiodWithEnv([]string{
		`{name: PILOT_ENABLE_NODE_UNTAINT_CONTROLLERS, value: "true"}`,
		`{name: PILOT_NODE_UNTAINT_CONTROLLERS_TAINT_NAME, value: "example.com/cni-not-ready"}`,
		`{name: ISTIO_GPRC_MAXRECVMSGSIZE, valueFrom: {secretKeyRef: {name: tuning, key: grpc}}}`,
		`{name: PILOT_TRACE_SAMPLING, value: "1"}`,
	}))
	r := s.Revisions[0]
	want := map[string]string{"PILOT_ENABLE_NODE_UNTAINT_CONTROLLERS": "true", "PILOT_NODE_UNTAINT_CONTROLLERS_TAINT_NAME": "example.com/cni-not-ready"}
	if d := cmp.Diff(want, r.Settings); d != "" {
		t.Errorf("Settings (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"ISTIO_GPRC_MAXRECVMSGSIZE"}, r.UnknownSettings); d != "" {
		t.Errorf("UnknownSettings (-want +got):\n%s", d)
	}
	if _, set, known := r.Setting("ISTIO_GPRC_MAXRECVMSGSIZE"); !set || known {
		t.Errorf("a limit from a Secret: set=%v known=%v, want set and unknown", set, known)
	}
}
