package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// TestAPlanMadeElsewhereIsNamedAndADemoPlanIsRefused: applying a saved plan to a live cluster says
// where it was made when that is not this cluster, and refuses one made from the demo mesh.
func TestAPlanMadeElsewhereIsNamedAndADemoPlanIsRefused(t *testing.T) {
	here := &Cluster{Source: plan.LiveSource("prod", "https://10.0.0.1:6443")}
	tests := []struct {
		name, source string
		code         int
		say          string
	}{
		{"a demo plan applies to no cluster", plan.SourceDemo, ExitUsage, ""},
		{"a dump's plan is named before it is applied", plan.OfflineSource("/d"), ExitOK, "was made from the dump in folder /d (files saved with kubectl, not a live cluster), not from the live cluster of kubeconfig context prod"},
		{"another cluster's plan is named", plan.LiveSource("staging", "https://10.9.9.9:6443"), ExitOK, "was made from the live cluster of kubeconfig context staging"},
		{"this cluster's plan goes ahead silently", plan.LiveSource("prod", "https://10.0.0.1:6443"), ExitOK, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := plan.New(plan.Metadata{Name: "p", Source: tc.source})
			a := &Apply{PlanFile: "p.yaml"}
			var out bytes.Buffer
			err := a.checkSource(p, here, &out, &Asker{Yes: true, Out: &out})
			if ExitCode(err) != tc.code {
				t.Errorf("exit %d (%v), want %d", ExitCode(err), err, tc.code)
			}
			if tc.say == "" && tc.code == ExitOK && out.Len() > 0 {
				t.Errorf("said %q for a plan of this cluster", out.String())
			}
			if tc.say != "" && !strings.Contains(out.String(), tc.say) {
				t.Errorf("said %q, want %q", out.String(), tc.say)
			}
		})
	}
}

// TestRemediesNameTheCommandsFlags: a finding's remedy names the library's option as data; each
// command says its own flag for it, and keeps the library's name where it has none.
func TestRemediesNameTheCommandsFlags(t *testing.T) {
	c := NewCommand("bluegreen-ztunnel", "test", &bytes.Buffer{})
	var nf NodeFlags
	nf.Register(c, "", "")
	var ch Charts
	ch.Register(c)
	f := plan.Finding{Remedy: "the plan asks first (BlueGreen.LocalStorage: evict drains without asking); pass newer release data (releases.LoadFile)",
		RemedyOptions: []plan.RemedyOption{{Option: "BlueGreen.LocalStorage", Value: "evict"}, {Option: "releases.LoadFile"}}}
	want := "the plan asks first (--local-storage evict drains without asking); pass newer release data (--chart-index FILE)"
	if got := f.RemedyWith(c.OptionName); got != want {
		t.Errorf("remedy %q\nwant   %q", got, want)
	}
	bare := NewCommand("move-tag", "test", &bytes.Buffer{})
	if got := f.RemedyWith(bare.OptionName); got != f.Remedy {
		t.Errorf("a command without the flags renamed the options: %q", got)
	}
}
