package advisories_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/knowledge/advisories"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

var update = flag.Bool("update", false, "rewrite testdata/embedded.golden from advisories.yaml")

// pinned is what the embedded data must say of one advisory. Each value was read upstream
// (advisories.yaml names where); changing one here should be as deliberate as changing it there.
type pinned struct {
	name       string
	id         string
	component  advisories.Component
	affected   []string          // versions that must be affected
	unaffected []string          // versions that must not be
	fixed      map[string]string // minor -> first fixed patch
	noFix      []string          // minors with an open range and no fix
	pending    []string          // fixed patches that are on a release branch but in no release read
	leaves     []string          // names (for revision 1-30-3) of objects left behind, for the advisory's first operation
}

var everyAdvisory = []pinned{
	// The six the issue names.
	{name: "istio-cni 1.30.3 is affected by the CNI deadlock after a node reboot; 1.30.4 is not",
		id: "istio#60668", component: advisories.CNI,
		affected: []string{"1.30.3", "1.30.0", "1.29.8", "1.28.10"}, unaffected: []string{"1.30.4", "1.31.0", "1.32.0"},
		fixed: map[string]string{"1.30": "1.30.4", "1.31": "1.31.0"}, noFix: []string{"1.29", "1.28"}},
	{name: "uninstalling any covered revision leaves its two gateway Leases behind, with no fix anywhere",
		id: "istio#61155", component: advisories.Istiod,
		affected: []string{"1.24.0", "1.29.8", "1.30.5", "1.31.1", "1.32.0"}, noFix: []string{"1.30", "1.31", "1.32"},
		leaves: []string{"istio-gateway-deployment-1-30-3", "istio-gateway-status-leader-1-30-3"}},
	{name: "istioctl 1.30.5 leaves istiod-default-validator behind when removing the default tag; 1.31.0 does not",
		id: "istio#60537", component: advisories.Istioctl,
		affected: []string{"1.30.5", "1.29.8"}, unaffected: []string{"1.31.0", "1.31.1"},
		fixed: map[string]string{"1.31": "1.31.0"}, noFix: []string{"1.30", "1.29"},
		leaves: []string{"istiod-default-validator"}},
	{name: "an istiod 1.29.4 being left drops a Gateway's config on a revision change; 1.29.5 and 1.30.2 do not",
		id: "istio#59959", component: advisories.Istiod,
		affected: []string{"1.29.4", "1.30.1", "1.28.10"}, unaffected: []string{"1.29.5", "1.30.2", "1.31.0"},
		fixed: map[string]string{"1.29": "1.29.5", "1.30": "1.30.2", "1.31": "1.31.0"}, noFix: []string{"1.28"}},
	{name: "istiod 1.30.3 is free of the larger ztunnel reconnect request; 1.30.4 and 1.29.7 bring it",
		id: "ztunnel#1966", component: advisories.Istiod,
		affected: []string{"1.30.4", "1.29.7", "1.31.0", "1.32.0"}, unaffected: []string{"1.30.3", "1.29.6", "1.28.10"},
		noFix: []string{"1.29", "1.30", "1.31"}},
	{name: "istiod 1.30.2 always untaints cni.istio.io/not-ready; from 1.30.3 the taint name is configurable",
		id: "istio#57844", component: advisories.Istiod,
		affected: []string{"1.30.3", "1.31.0"}, unaffected: []string{"1.30.2", "1.29.8"}},
	// istio-cni.
	{name: "istio-cni 1.30.4 can flip its iptables backend across restarts; 1.30.5, 1.29.8 and 1.31.1 cannot",
		id: "istio#61020", component: advisories.CNI,
		affected: []string{"1.30.4", "1.29.7", "1.31.0"}, unaffected: []string{"1.30.5", "1.29.8", "1.31.1"},
		fixed: map[string]string{"1.29": "1.29.8", "1.30": "1.30.5", "1.31": "1.31.1"}},
	{name: "istio-cni 1.30.1 can drop ambient pods from the probe ipset after a reboot; 1.30.2 cannot",
		id: "istio-note/ambient-probe-ipset-reconcile", component: advisories.CNI,
		affected: []string{"1.30.1", "1.29.4"}, unaffected: []string{"1.30.2", "1.29.5", "1.31.0"},
		fixed: map[string]string{"1.29": "1.29.5", "1.30": "1.30.2"}},
	{name: "istio-cni 1.30.2 can deadlock its ZDS server when a pod is deleted during a ztunnel connect; 1.30.3 cannot",
		id: "ztunnel#1674", component: advisories.CNI,
		affected: []string{"1.30.2", "1.29.5"}, unaffected: []string{"1.30.3", "1.29.6", "1.31.0"},
		fixed: map[string]string{"1.29": "1.29.6", "1.30": "1.30.3"}},
	{name: "istio-cni 1.26.2 can keep a deleted pod in ztunnel's snapshot; 1.26.3 cannot",
		id: "istio#56738", component: advisories.CNI,
		affected: []string{"1.26.2", "1.25.5"}, unaffected: []string{"1.26.3", "1.27.0"},
		fixed: map[string]string{"1.26": "1.26.3", "1.27": "1.27.0"}},
	{name: "istio-cni 1.24.2 can lose track of ztunnel on out-of-order disconnects; 1.24.3 cannot",
		id: "istio#54544", component: advisories.CNI,
		affected: []string{"1.24.2"}, unaffected: []string{"1.24.3", "1.25.0"},
		fixed: map[string]string{"1.24": "1.24.3"}},
	{name: "istio-cni 1.30.0 on nftables can crash on concurrent pod additions; 1.30.1 cannot, and 1.27 has no nftables",
		id: "istio#60328", component: advisories.CNI,
		affected: []string{"1.30.0", "1.29.3", "1.28.10"}, unaffected: []string{"1.30.1", "1.29.4", "1.27.9"},
		fixed: map[string]string{"1.29": "1.29.4", "1.30": "1.30.1"}, noFix: []string{"1.28"}},
	{name: "istio-cni 1.28.1 leaves iptables rules when switching to nftables; 1.28.2 does not",
		id: "istio#58353", component: advisories.CNI,
		affected: []string{"1.28.1"}, unaffected: []string{"1.28.2", "1.29.0", "1.27.9"},
		fixed: map[string]string{"1.28": "1.28.2"}},
	{name: "istio-cni 1.30.3 treats hostNetwork pods as eligible for ambient; 1.30.4 and 1.26 do not",
		id: "istio#61168", component: advisories.CNI,
		affected: []string{"1.30.3", "1.29.6", "1.28.10", "1.27.0"}, unaffected: []string{"1.30.4", "1.29.7", "1.26.8"},
		fixed: map[string]string{"1.29": "1.29.7", "1.30": "1.30.4"}, noFix: []string{"1.27", "1.28"}},
	{name: "istio-cni 1.30.5 may still pair a pod with a foreign netns, as neither 1.30.4 nor 1.30.5 lists the fix; 1.29.7 does",
		id: "istio#61211", component: advisories.CNI,
		affected: []string{"1.30.5", "1.29.6"}, unaffected: []string{"1.29.7", "1.31.0"},
		fixed: map[string]string{"1.29": "1.29.7", "1.30": "1.30.6"}, pending: []string{"1.30.6"}},
	{name: "istio-cni 1.30.0 un-enrolls pods of excluded namespaces; 1.29 does not",
		id: "istio#59295", component: advisories.CNI,
		affected: []string{"1.30.0", "1.31.1"}, unaffected: []string{"1.29.8"}},
	{name: "an istio-cni 1.28 upgrade leaves running ambient pods' rules alone; 1.29.0 reconciles them",
		id: "istio-note/reconcile-iptables-default-true", component: advisories.CNI,
		affected: []string{"1.28.10", "1.25.0"}, unaffected: []string{"1.29.0"},
		fixed: map[string]string{"1.29": "1.29.0"}, noFix: []string{"1.28"}},
	{name: "istio-cni 1.25.1 can block its own upgrade on expired credentials; 1.25.2 cannot",
		id: "istio#55215", component: advisories.CNI,
		affected: []string{"1.25.1", "1.24.4"}, unaffected: []string{"1.25.2", "1.24.5", "1.26.0"},
		fixed: map[string]string{"1.24": "1.24.5", "1.25": "1.25.2"}},
	{name: "istio-cni 1.24 lets pods start unmeshed during its restart; 1.25.0 holds them",
		id: "istio#49009", component: advisories.CNI,
		affected: []string{"1.24.6"}, unaffected: []string{"1.25.0"},
		fixed: map[string]string{"1.25": "1.25.0"}, noFix: []string{"1.24"}},
	// istiod, gateways, waypoints.
	{name: "istiod 1.30.3 can be ready before its webhook; 1.30.4 and 1.29.7 cannot",
		id: "istio#61049", component: advisories.Istiod,
		affected: []string{"1.30.3", "1.29.6", "1.28.10"}, unaffected: []string{"1.30.4", "1.29.7", "1.31.0"},
		fixed: map[string]string{"1.29": "1.29.7", "1.30": "1.30.4"}, noFix: []string{"1.28"}},
	{name: "istiod 1.30.3 can fail to create waypoint Deployments at startup; 1.30.4 cannot, and 1.28's fix is unreleased",
		id: "istio#61095", component: advisories.Istiod,
		affected: []string{"1.30.3", "1.29.6", "1.28.10"}, unaffected: []string{"1.30.4", "1.29.7"},
		fixed: map[string]string{"1.28": "1.28.11", "1.29": "1.29.7", "1.30": "1.30.4"}, pending: []string{"1.28.11"}},
	{name: "restarting istiod 1.29.1 rolls every waypoint; 1.29.2 does not",
		id: "istio#59709", component: advisories.Istiod,
		affected: []string{"1.29.1", "1.28.5", "1.27.8"}, unaffected: []string{"1.29.2", "1.28.6", "1.27.9", "1.30.0"},
		fixed: map[string]string{"1.27": "1.27.9", "1.28": "1.28.6", "1.29": "1.29.2", "1.30": "1.30.0"}},
	{name: "sidecars reconnecting to istiod 1.30.5 can lose inbound clusters; 1.31.0 fixes it",
		id: "istio#58125", component: advisories.Istiod,
		affected: []string{"1.30.5", "1.29.8"}, unaffected: []string{"1.31.0"},
		fixed: map[string]string{"1.31": "1.31.0"}, noFix: []string{"1.30", "1.29"}},
	{name: "a 1.30.2 waypoint waits its whole grace period; 1.30.3 drains on zero connections",
		id: "istio#60728", component: advisories.Waypoint,
		affected: []string{"1.30.2", "1.29.5"}, unaffected: []string{"1.30.3", "1.29.6", "1.31.0"},
		fixed: map[string]string{"1.29": "1.29.6", "1.30": "1.30.3"}},
	{name: "istiod 1.30.5 without a default revision can panic on a VirtualService without destinations; 1.31.0 cannot",
		id: "istio#60110", component: advisories.Istiod,
		affected: []string{"1.30.5"}, unaffected: []string{"1.31.0"},
		fixed: map[string]string{"1.31": "1.31.0"}, noFix: []string{"1.30"}},
	// Charts and skew.
	{name: "the 1.29.1 charts conflict with server-side apply on failurePolicy; 1.29.2 do not",
		id: "istio#58302", component: advisories.Base,
		affected: []string{"1.29.1", "1.28.5"}, unaffected: []string{"1.29.2", "1.28.6", "1.30.0"},
		fixed: map[string]string{"1.28": "1.28.6", "1.29": "1.29.2"}},
	{name: "every 1.25 ztunnel chart names its resources after the release; 1.24 and 1.26 do not",
		id: "istio-note/ztunnel-helm-chart", component: advisories.Ztunnel,
		affected: []string{"1.25.0", "1.25.5"}, unaffected: []string{"1.24.6", "1.26.0"},
		fixed: map[string]string{"1.26": "1.26.0"}, noFix: []string{"1.25"}},
	{name: "a 1.27 ztunnel NACKs passthrough services; a 1.28.0 ztunnel does not",
		id: "istio#57656", component: advisories.Ztunnel,
		affected: []string{"1.27.9"}, unaffected: []string{"1.28.0"},
		fixed: map[string]string{"1.28": "1.28.0"}},
	{name: "a 1.28 ztunnel enforces dry-run policies; a 1.29.0 ztunnel does not",
		id: "istio-note/authz-dry-run-ambient", component: advisories.Ztunnel,
		affected: []string{"1.28.10"}, unaffected: []string{"1.29.0"},
		fixed: map[string]string{"1.29": "1.29.0"}},
}

func TestEveryEmbeddedAdvisoryIsPinned(t *testing.T) {
	d := advisories.Default()
	seen := map[string]bool{}
	for _, p := range everyAdvisory {
		t.Run(p.name, func(t *testing.T) {
			seen[p.id] = true
			a, ok := d.Advisory(p.id)
			if !ok {
				t.Fatalf("%s is not in the embedded data", p.id)
			}
			if a.Component != p.component {
				t.Errorf("component = %s, want %s", a.Component, p.component)
			}
			for _, s := range p.affected {
				if !a.Affects(mesh.MustParseVersion(s)) {
					t.Errorf("%s %s should be affected", p.component, s)
				}
				if !containsID(d.Affecting(p.component, mesh.MustParseVersion(s)), p.id) {
					t.Errorf("Affecting(%s, %s) omits %s", p.component, s, p.id)
				}
			}
			for _, s := range p.unaffected {
				if a.Affects(mesh.MustParseVersion(s)) {
					t.Errorf("%s %s should not be affected", p.component, s)
				}
			}
			for minor, want := range p.fixed {
				f, ok := a.FixedPatch(mesh.MustParseVersion(minor + ".0"))
				if !ok || f.Version.String() != want {
					t.Errorf("first fixed %s patch = %s (%v), want %s", minor, f.Version, ok, want)
				}
				isPending := false
				for _, pv := range p.pending {
					isPending = isPending || pv == want
				}
				if ok && f.Pending != isPending {
					t.Errorf("fix %s pending = %v, want %v", want, f.Pending, isPending)
				}
			}
			for _, minor := range p.noFix {
				m := mesh.MustParseVersion(minor + ".0")
				if f, ok := a.FixedPatch(m); ok {
					t.Errorf("%s should have no fix, data says %s", minor, f.Version)
				}
				h, _ := d.Horizon(m)
				if !a.Affects(h.Newest) && !h.Newest.IsZero() {
					t.Errorf("%s has no fix, so its newest read patch %s should be affected", minor, h.Newest)
				}
			}
			if p.leaves != nil {
				var got []string
				for _, l := range d.LeftBehind(a.When[0], p.component, mesh.MustParseVersion(p.affected[0])) {
					_, name := l.Resolve("1-30-3", "istio-system")
					got = append(got, name)
				}
				if strings.Join(got, ",") != strings.Join(p.leaves, ",") {
					t.Errorf("left behind = %v, want %v", got, p.leaves)
				}
			}
		})
	}
	for _, a := range d.Advisories {
		if !seen[a.ID] {
			t.Errorf("%s has no pinned expectations; add a row to everyAdvisory", a.ID)
		}
	}
}

func containsID(as []advisories.Advisory, id string) bool {
	for _, a := range as {
		if a.ID == id {
			return true
		}
	}
	return false
}

func TestEveryEmbeddedAdvisoryStatesItsSourceAndWasReviewed(t *testing.T) {
	d := advisories.Default()
	if got := d.Origin().String(); got != "embedded advisory data (advisories.yaml)" {
		t.Errorf("origin = %q", got)
	}
	if n := len(d.Advisories); n < 15 || n > 30 {
		t.Errorf("%d advisories; the data should hold 15 to 30", n)
	}
	for _, a := range d.Advisories {
		s := a.Source
		switch {
		case s.Note == "" && len(s.Refs) == 0:
			t.Errorf("%s: no source", a.ID)
		case s.Note != "" && len(s.Commit) != 40:
			t.Errorf("%s: note %s without the commit it was read at", a.ID, s.Note)
		case s.Issue == "" && s.PR == "":
			t.Errorf("%s: no upstream link", a.ID)
		case !a.Reviewed:
			t.Errorf("%s: not reviewed; the embedded data holds reviewed entries only", a.ID)
		}
		if strings.HasPrefix(a.ID, "istio#") && s.Issue == "" && !strings.HasSuffix(s.PR, "/"+strings.TrimPrefix(a.ID, "istio#")) {
			t.Errorf("%s: the id names neither the linked issue nor the pull request", a.ID)
		}
		for _, f := range append(append([]advisories.Release(nil), a.FixedIn...), a.IntroducedIn...) {
			if f.Source == "" {
				t.Errorf("%s: %s has no source", a.ID, f.Version)
			}
		}
	}
}

func TestTheEmbeddedDataCoversTheSupportedMinors(t *testing.T) {
	d := advisories.Default()
	for m := 24; m <= 32; m++ {
		if !d.Covers(mesh.Version{Major: 1, Minor: m}) {
			t.Errorf("no horizon for 1.%d", m)
		}
	}
	if d.Covers(mesh.MustParseVersion("1.23.0")) {
		t.Error("1.23 is outside the data's coverage")
	}
}

// The embedded file is exactly what WriteYAML gives for its own data, after its header: the
// generator's output is canonical, so a hand edit shows up here.
func TestTheEmbeddedFileIsCanonical(t *testing.T) {
	raw, err := os.ReadFile("advisories.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var header []string
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "#") {
			break
		}
		header = append(header, strings.TrimPrefix(strings.TrimPrefix(line, "#"), " "))
	}
	var b bytes.Buffer
	if err := advisories.Default().WriteYAML(&b, strings.Join(header, "\n")); err != nil {
		t.Fatal(err)
	}
	if b.String() != string(raw) {
		t.Error("advisories.yaml differs from its canonical form; regenerate it with hack/advisories rather than editing it")
	}
}

// testdata/embedded.golden lists every advisory's ranges and fixes in one line each, so a refresh
// of the data shows up as a reviewable diff. Rewrite it with go test ./ambient/knowledge/advisories -update.
func TestTheEmbeddedRangesMatchTheGoldenSummary(t *testing.T) {
	var b strings.Builder
	for _, a := range advisories.Default().Advisories {
		var rs, fs []string
		for _, r := range a.Affected {
			rs = append(rs, r.String())
		}
		for _, f := range a.FixedIn {
			s := f.Version.String()
			if f.Pending {
				s += " (pending)"
			}
			fs = append(fs, s)
		}
		fmt.Fprintf(&b, "%s %s: affected %s; fixed in %s\n", a.ID, a.Component, strings.Join(rs, ", "), orNone(fs))
	}
	const golden = "testdata/embedded.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if b.String() != string(want) {
		t.Errorf("summary differs from %s; review and run go test -update:\n%s", golden, b.String())
	}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
