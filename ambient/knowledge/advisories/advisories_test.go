package advisories_test

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ambientkit/ambientkit/ambient/knowledge/advisories"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

var v = mesh.MustParseVersion

func patches(minor string, from, to int) []mesh.Version {
	var out []mesh.Version
	for p := from; p <= to; p++ {
		out = append(out, mesh.Version{Major: 1, Minor: v(minor + ".0").Minor, Patch: p})
	}
	return out
}

func TestAffectsFollowsTheRanges(t *testing.T) {
	a, _ := load(t, valid).Advisory("istio#60668")
	tests := []struct {
		name    string
		version string
		want    bool
	}{
		{"the first patch of a closed range is affected", "1.30.0", true},
		{"the last patch of a closed range is affected", "1.30.3", true},
		{"the patch after a closed range is not affected", "1.30.4", false},
		{"a later patch of the fixed minor is not affected", "1.30.9", false},
		{"every patch of an open range's minor is affected", "1.29.0", true},
		{"a patch past the open range's horizon still counts as affected", "1.29.20", true},
		{"a minor without a range is not affected", "1.31.0", false},
		{"an older minor without a range is not affected", "1.28.5", false},
		{"a pre-release before a range's first patch is not in it", "1.30.0-rc.1", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := a.Affects(v(tc.version)); got != tc.want {
				t.Errorf("Affects(%s) = %v, want %v", tc.version, got, tc.want)
			}
		})
	}
}

func TestNewestUnaffectedPicksFromWhatTheCallerCanInstall(t *testing.T) {
	a, _ := load(t, valid).Advisory("istio#60668")
	known := append(append(patches("1.29", 0, 8), patches("1.30", 0, 5)...), v("1.31.0"), v("1.30.6-rc.0"))
	tests := []struct {
		name   string
		minor  string
		known  []mesh.Version
		want   string
		wantOK bool
	}{
		{"the newest installable patch of a fixed minor is returned", "1.30.3", known, "1.30.5", true},
		{"with only the fix installable, the fix is returned", "1.30.0", patches("1.30", 0, 4), "1.30.4", true},
		{"a minor whose known patches are all affected has none", "1.30.0", patches("1.30", 0, 3), "", false},
		{"an open range's minor has none", "1.29.6", known, "", false},
		{"pre-releases are never picked", "1.30.0", []mesh.Version{v("1.30.3"), v("1.30.6-rc.0")}, "", false},
		{"nothing known, nothing picked", "1.30.0", nil, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := a.NewestUnaffected(v(tc.minor), tc.known)
			if ok != tc.wantOK || ok && got.String() != tc.want {
				t.Errorf("NewestUnaffected(%s) = %s, %v; want %s, %v", tc.minor, got, ok, tc.want, tc.wantOK)
			}
		})
	}
	fix, ok := a.FixedPatch(v("1.30.1"))
	if !ok || fix.Version != v("1.30.4") || fix.Source == "" {
		t.Errorf("FixedPatch(1.30) = %+v, %v; want 1.30.4 with its source", fix, ok)
	}
	if _, ok := a.FixedPatch(v("1.29.1")); ok {
		t.Error("1.29 has no fix, FixedPatch found one")
	}
}

func TestFirstUnaffectedAfterLeavesALineWithoutAFix(t *testing.T) {
	a, _ := load(t, valid).Advisory("istio#60668")
	known := append(append(patches("1.29", 0, 8), patches("1.30", 0, 5)...), v("1.31.0"))
	if got, ok := a.FirstUnaffectedAfter(v("1.29.6"), known); !ok || got != v("1.30.4") {
		t.Errorf("from 1.29.6: %s, %v; want 1.30.4 (1.29 has no fix, 1.30.0–1.30.3 are affected)", got, ok)
	}
	if got, ok := a.FirstUnaffectedAfter(v("1.30.4"), known); !ok || got != v("1.30.5") {
		t.Errorf("from 1.30.4: %s, %v; want the next newer unaffected, 1.30.5", got, ok)
	}
	if _, ok := a.FirstUnaffectedAfter(v("1.31.0"), known); ok {
		t.Error("nothing is newer than 1.31.0, yet one was found")
	}
}

func TestAppliesDecidesConditionsFromTheFacts(t *testing.T) {
	d := load(t, valid)
	cni, _ := d.Advisory("istio#60668")
	scale := cni
	scale.Conditions = []advisories.Condition{{Kind: advisories.MinWorkloads, Threshold: 40000}}
	tests := []struct {
		name        string
		a           advisories.Advisory
		version     string
		facts       advisories.Facts
		want        bool
		wantUnknown []string
	}{
		{"an affected version whose condition holds applies", cni, "1.30.3",
			advisories.Facts{Flags: map[advisories.ConditionKind]bool{advisories.CNIAmbientDisabled: true}}, true, nil},
		{"a condition known to be false keeps it from applying", cni, "1.30.3",
			advisories.Facts{Flags: map[advisories.ConditionKind]bool{advisories.CNIAmbientDisabled: false}}, false, nil},
		{"an undecided condition may apply and is reported", cni, "1.30.3", advisories.Facts{}, true, []string{"cni-ambient-disabled"}},
		{"an unaffected version never applies", cni, "1.30.4",
			advisories.Facts{Flags: map[advisories.ConditionKind]bool{advisories.CNIAmbientDisabled: true}}, false, nil},
		{"a mesh at the workload threshold is affected", scale, "1.30.3", advisories.Facts{Workloads: 40000}, true, nil},
		{"a mesh below the workload threshold is not", scale, "1.30.3", advisories.Facts{Workloads: 39999}, false, nil},
		{"an uncounted mesh leaves the threshold undecided", scale, "1.30.3", advisories.Facts{}, true, []string{"workloads>=40000"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, unknown := tc.a.Applies(v(tc.version), tc.facts)
			var names []string
			for _, c := range unknown {
				names = append(names, c.String())
			}
			if got != tc.want || !cmp.Equal(names, tc.wantUnknown) {
				t.Errorf("Applies = %v, %v; want %v, %v", got, names, tc.want, tc.wantUnknown)
			}
		})
	}
}

func TestAffectingAndLeftBehindSelectByComponentVersionAndOperation(t *testing.T) {
	d := load(t, valid)
	ids := func(as []advisories.Advisory) []string {
		var out []string
		for _, a := range as {
			out = append(out, a.ID)
		}
		return out
	}
	if got := ids(d.Affecting(advisories.CNI, v("1.30.3"))); !cmp.Equal(got, []string{"istio#60668"}) {
		t.Errorf("cni 1.30.3: %v", got)
	}
	if got := ids(d.Affecting(advisories.CNI, v("1.30.4"))); got != nil {
		t.Errorf("cni 1.30.4: %v, want none", got)
	}
	if got := ids(d.Affecting(advisories.Istiod, v("1.30.3"))); !cmp.Equal(got, []string{"istio#61155"}) {
		t.Errorf("istiod 1.30.3: %v", got)
	}
	left := d.LeftBehind(advisories.RevisionUninstall, advisories.Istiod, v("1.30.3"))
	if len(left) != 1 || left[0].AdvisoryID != "istio#61155" {
		t.Fatalf("left behind by uninstalling 1.30.3: %+v", left)
	}
	ns, name := left[0].Resolve("1-30-3", "istio-system")
	if ns != "istio-system" || name != "istio-gateway-deployment-1-30-3" {
		t.Errorf("resolved to %s/%s", ns, name)
	}
	if _, name := left[0].Resolve("", "istio-system"); name != "istio-gateway-deployment-default" {
		t.Errorf("a revision without a name resolves to %s, want the default revision's Lease", name)
	}
	if got := d.LeftBehind(advisories.TagRemoval, advisories.Istiod, v("1.30.3")); got != nil {
		t.Errorf("removing a tag leaves %+v, want nothing from this data", got)
	}
	if !d.Covers(v("1.29.4")) || d.Covers(v("1.28.0")) {
		t.Error("coverage should be exactly the minors with a horizon, 1.29 and 1.30")
	}
	if h, ok := d.Horizon(v("1.30.0")); !ok || h.Newest != v("1.30.5") {
		t.Errorf("horizon of 1.30 = %+v, %v", h, ok)
	}
}

func TestConditionsReadTheirTextForm(t *testing.T) {
	for _, k := range advisories.ConditionKinds() {
		text := string(k)
		if k == advisories.MinWorkloads {
			text = "workloads>=55000"
		}
		c, err := advisories.ParseCondition(text)
		if err != nil {
			t.Errorf("%s: %v", text, err)
			continue
		}
		if c.String() != text {
			t.Errorf("%s prints as %s", text, c)
		}
	}
	for _, bad := range []string{"workloads>=0", "workloads>=-5", "workloads>=4e4", "workloads>=040000", "workloads>40000", ""} {
		if _, err := advisories.ParseCondition(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// Affects, NewestUnaffected and FirstUnaffectedAfter agree with a direct reading of the ranges, for
// generated advisories and version lists (fixed seed).
func TestQueriesAgreeWithTheRangesOnGeneratedData(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 31))
	for n := 0; n < 500; n++ {
		var a advisories.Advisory
		spans := map[int][2]int{} // minor -> [from, to]; to < 0 is open
		for minor := 24; minor <= 32; minor++ {
			if r.IntN(3) == 0 {
				continue
			}
			from := r.IntN(5)
			to := -1
			if r.IntN(2) == 0 {
				to = from + r.IntN(6)
			}
			spans[minor] = [2]int{from, to}
			rg := advisories.Range{From: mesh.Version{Major: 1, Minor: minor, Patch: from}}
			if to >= 0 {
				rg.To = mesh.Version{Major: 1, Minor: minor, Patch: to}
			}
			a.Affected = append(a.Affected, rg)
		}
		inRanges := func(x mesh.Version) bool {
			s, ok := spans[x.Minor]
			return ok && x.Major == 1 && x.Pre == "" && x.Patch >= s[0] && (s[1] < 0 || x.Patch <= s[1])
		}
		var known []mesh.Version
		for i := 0; i < 30; i++ {
			known = append(known, mesh.Version{Major: 1, Minor: 24 + r.IntN(9), Patch: r.IntN(12)})
		}
		for _, k := range known {
			if a.Affects(k) != inRanges(k) {
				t.Fatalf("case %d: Affects(%s) = %v, ranges say %v", n, k, a.Affects(k), inRanges(k))
			}
		}
		probe := mesh.Version{Major: 1, Minor: 24 + r.IntN(9), Patch: r.IntN(12)}
		got, ok := a.NewestUnaffected(probe, known)
		var want mesh.Version
		wantOK := false
		for _, k := range known {
			if k.SameMinor(probe) && !inRanges(k) && (!wantOK || want.Less(k)) {
				want, wantOK = k, true
			}
		}
		if ok != wantOK || got != want {
			t.Fatalf("case %d: NewestUnaffected(%s) = %s, %v; want %s, %v", n, probe, got, ok, want, wantOK)
		}
		got, ok = a.FirstUnaffectedAfter(probe, known)
		wantOK = false
		for _, k := range known {
			if probe.Less(k) && !inRanges(k) && (!wantOK || k.Less(want)) {
				want, wantOK = k, true
			}
		}
		if ok != wantOK || ok && got != want {
			t.Fatalf("case %d: FirstUnaffectedAfter(%s) = %s, %v; want %s, %v", n, probe, got, ok, want, wantOK)
		}
	}
}
