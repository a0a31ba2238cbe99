package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/demo"
	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/ztunnel"
)

// upgradeCommand is the upgrade example's command line, parsed from args, named "upgrade".
func upgradeCommand(t *testing.T, args ...string) (*Command, *Plan) {
	t.Helper()
	c, pf, err := parseUpgrade(args...)
	if err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return c, pf
}

// parseUpgrade parses the arguments as upgrade's command line.
// Without --kubeconfig or --context it names a context, as upgrade needs one.
func parseUpgrade(args ...string) (*Command, *Plan, error) {
	if !slices.Contains(args, "--kubeconfig") && !slices.Contains(args, "--context") {
		args = append([]string{"--context", "test"}, args...)
	}
	c := NewCommand("upgrade", "test", &bytes.Buffer{})
	c.Invocation = "upgrade"
	var src Source
	src.Register(c, false)
	var pf Plan
	pf.Register(c)
	c.String(Spec{Name: "plan-file", Arg: "FILE"}, "ambientkit-upgrade.plan.yaml")
	c.Bool(Spec{Name: "dry-run"})
	c.Bool(Spec{Name: "yes"})
	c.Bool(Spec{Name: "saved"})
	c.Bool(Spec{Name: "resume"})
	c.String(Spec{Name: "rollback", Arg: "STEP"}, "")
	c.String(LogFormatSpec, "text")
	return c, &pf, c.Parse(args)
}

// inFolderWith runs the test in a new folder holding empty files at the paths given.
func inFolderWith(t *testing.T, files ...string) {
	t.Helper()
	t.Chdir(t.TempDir())
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestExitCodesSayWhyAProgramStopped(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want int
	}{
		{"no error is success", nil, ExitOK},
		{"--help is success", flag.ErrHelp, ExitOK},
		{"a bad flag is a usage error", fmt.Errorf("%w: -o xml", ErrUsage), ExitUsage},
		{"blocking findings from the planner are blocked", fmt.Errorf("%w: CNI_AHEAD", ambient.ErrBlocked), ExitBlocked},
		{"blocked steps are blocked", fmt.Errorf("%w: istiod/1-30-3/remove", ErrBlocked), ExitBlocked},
		{"the executor refusing a stopped plan is blocked", &execute.StepError{StepID: "s", Err: execute.ErrStepBlocked}, ExitBlocked},
		{"waivable findings need a waiver", fmt.Errorf("%w: PDB_BLOCKS_DRAIN", ErrNeedsWaiver), ExitNeedsWaiver},
		{"a failed step is an error", (&Next{Cmd: NewCommand("upgrade", "", nil)}).Wrap(&execute.StepError{StepID: "s", Err: execute.ErrTimeout}), ExitError},
		{"anything else is an error", errors.New("kubeconfig: no such file"), ExitError},
	}
	for _, tc := range cases {
		if got := ExitCode(tc.err); got != tc.want {
			t.Errorf("%s: ExitCode(%v) = %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestTheAdviceAfterAFailureNamesTheCommandForThatKindOfFailure(t *testing.T) {
	inFolderWith(t, "k")
	args := []string{"--kubeconfig", "k", "--context", "prod", "--target", "1.31.4", "--charts", "oci://r.example.com/istio", "--plan-file", "p.yaml", "--yes"}
	const (
		replan = "upgrade --charts oci://r.example.com/istio --context prod --kubeconfig k --plan-file p.yaml --target 1.31.4"
		resume = "upgrade --context prod --kubeconfig k --plan-file p.yaml --resume"
		again  = "upgrade --charts oci://r.example.com/istio --context prod --kubeconfig k --plan-file p.yaml --target 1.31.4 --yes"
	)
	step := func(err error) error {
		return &execute.StepError{StepID: "cni/upgrade", Err: fmt.Errorf("%w: details", err)}
	}
	cases := []struct {
		name     string
		err      error
		dry      bool
		inMemory bool
		rollback string // offered by a GateUnhealthy event
		want     []string
		not      []string
	}{
		{name: "a stale plan is planned again", err: fmt.Errorf("%w: fingerprint", execute.ErrPlanStale), want: []string{"plan again", replan}, not: []string{"--resume"}},
		{name: "stopping findings are fixed or waived, then planned again", err: fmt.Errorf("%w: findings", execute.ErrStepBlocked),
			want: []string{"plan again", replan + " --waive CODE,..."}, not: []string{"--resume"}},
		{name: "a blocked step is fixed, then planned again", err: step(execute.ErrStepBlocked), want: []string{replan + " --waive"}},
		{name: "an approval is answered on a resumed run", err: step(execute.ErrApprovalRequired), want: []string{"answer yes", resume}, not: []string{"--yes"}},
		{name: "an unhealthy gate offers the rollback it named, or a resume", err: step(execute.ErrUnhealthy), rollback: "cni/upgrade",
			want: []string{"upgrade --context prod --kubeconfig k --plan-file p.yaml --rollback cni/upgrade", resume}},
		{name: "an unhealthy gate with nothing to roll back is fixed and resumed", err: step(execute.ErrUnhealthy), want: []string{resume}, not: []string{"--rollback"}},
		{name: "a timeout is fixed and resumed", err: step(execute.ErrTimeout), want: []string{"fix what the error names", resume}},
		{name: "a verification is fixed and resumed", err: step(execute.ErrVerification), want: []string{resume}},
		{name: "a precondition is fixed and resumed", err: step(execute.ErrPrecondition), want: []string{resume}},
		{name: "a missing backup is fixed and resumed", err: step(execute.ErrNoBackup), want: []string{resume}},
		{name: "a transient API error is resumed", err: &execute.StepError{StepID: "cni/upgrade", Err: apierrors.NewServiceUnavailable("etcd")},
			want: []string{"step cni/upgrade failed", resume}},
		{name: "a held Lease is waited for or asked about, then the same command", err: fmt.Errorf("%w: held by ci-42", execute.ErrLocked),
			want: []string{"kubectl get lease -n istio-system ambientkit-lock -o yaml", "run again: " + again}},
		{name: "a rolled-back step is planned again", err: step(execute.ErrRolledBack), want: []string{replan}, not: []string{"--resume"}},
		{name: "a missing chart is planned again with another source or version", err: fmt.Errorf("%w: istiod 1.31.4", execute.ErrChartMissing),
			want: []string{"--charts DIR|URL|oci://REF", replan}},
		{name: "a journal of another plan is planned again", err: fmt.Errorf("%w: x", execute.ErrJournalMismatch), want: []string{replan}},
		{name: "a stopped run is resumed", err: step(context.Canceled), want: []string{"stopped", resume}},
		{name: "an error before any step runs the same command again", err: errors.New("observe the live mesh: connection refused"), want: []string{"run again: " + again}},
		{name: "a dry run has no journal: it runs again", err: step(execute.ErrTimeout), dry: true, want: []string{"continue: upgrade --charts"}, not: []string{"--resume"}},
		{name: "a run on the in-memory demo cluster, gone with the process, starts again", err: step(execute.ErrTimeout), dry: true, inMemory: true,
			want: []string{"in-memory demo cluster lived in this process and is gone with it", "run again from the start: upgrade --charts"}, not: []string{"--resume", "continue:"}},
		{name: "a run on the in-memory demo cluster stopped by findings still says how to waive them", err: fmt.Errorf("%w: findings", ErrNeedsWaiver), dry: true, inMemory: true,
			want: []string{"--waive CODE,..."}, not: []string{"in-memory"}},
	}
	for _, tc := range cases {
		c, _ := upgradeCommand(t, args...)
		n := &Next{Cmd: c, DryRun: tc.dry, Namespace: "istio-system", InMemory: tc.inMemory}
		n.Observe(execute.Event{Type: execute.EventGateUnhealthy, Rollback: tc.rollback})
		err := n.Wrap(tc.err)
		if !errors.Is(err, tc.err) {
			t.Errorf("%s: the advice hides the error", tc.name)
		}
		got := n.For(tc.err)
		if !strings.HasSuffix(err.Error(), "\nnext: "+got) {
			t.Errorf("%s: Wrap gives %q, want the advice on a line of its own", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: advice %q\nlacks %q", tc.name, got, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(got, w) {
				t.Errorf("%s: advice %q\nshould not say %q", tc.name, got, w)
			}
		}
	}
}

func TestProgressOnAPipeIsOneLinePerEventWithoutControlCodes(t *testing.T) {
	events := []execute.Event{
		{Type: execute.EventRunStarted, Total: 3, Message: `applying plan "p" (3 steps)`},
		{Type: execute.EventStepStarted, StepID: "ztunnel/node/a/drain", Kind: plan.KindDrain, Index: 2, Total: 3, Message: "drain a"},
		{Type: execute.EventStepProgress, StepID: "ztunnel/node/a/drain", Kind: plan.KindDrain, Index: 2, Total: 3, Message: "node a: 1/2 pods evicted", Done: 1, Of: 2},
		{Type: execute.EventWaitingOnPDB, StepID: "ztunnel/node/a/drain", Index: 2, Total: 3, Message: "waiting on shop/db", PDBs: []string{"shop/db"}, Pods: []string{"shop/db-0"}, Node: "a"},
		{Type: execute.EventDryRun, StepID: "cni/upgrade", Index: 3, Total: 3, Message: "upgrade cni", Changes: []string{"would upgrade Helm release istio-system/istio-cni"}},
		{Type: execute.EventStepFailed, StepID: "cni/upgrade", Index: 3, Total: 3, Message: "boom", Err: errors.New("boom")},
	}
	var out bytes.Buffer
	p, err := NewProgress(&out, "text")
	if err != nil || p.live {
		t.Fatalf("a buffer is no terminal: %v live=%v", err, p != nil && p.live)
	}
	for _, ev := range events {
		p.Observe(ev)
	}
	p.End()
	if strings.ContainsAny(out.String(), "\x1b\r") {
		t.Errorf("control codes in piped output: %q", out.String())
	}
	want := `RunStarted: applying plan "p" (3 steps)
[2/3] StepStarted ztunnel/node/a/drain: drain a
[2/3] StepProgress ztunnel/node/a/drain: node a: 1/2 pods evicted
[2/3] WaitingOnPDB ztunnel/node/a/drain: waiting on shop/db
[3/3] DryRun cni/upgrade: upgrade cni
    would upgrade Helm release istio-system/istio-cni
[3/3] StepFailed cni/upgrade: boom
`
	if out.String() != want {
		t.Errorf("piped output:\n%s\nwant:\n%s", out.String(), want)
	}

	// On a terminal, progress inside a step rewrites one line; the next event replaces it.
	out.Reset()
	p = &Progress{w: &out, live: true}
	for _, ev := range events[1:4] {
		p.Observe(ev)
	}
	p.Observe(execute.Event{Type: execute.EventStepProgress, StepID: "s", Index: 1, Total: 1, Message: "still going"})
	p.Observe(execute.Event{Type: execute.EventWaveProgress, Total: 3, Message: "wave 1/1 w: draining 2 (a: PDB shop/db; b)"})
	p.End()
	wantTTY := "[2/3] StepStarted ztunnel/node/a/drain: drain a\n" +
		"\r\x1b[K[2/3] StepProgress ztunnel/node/a/drain: node a: 1/2 pods evicted" +
		"\r\x1b[K[2/3] WaitingOnPDB ztunnel/node/a/drain: waiting on shop/db\n" +
		"\r\x1b[K[1/1] StepProgress s: still going" +
		"\r\x1b[KWaveProgress: wave 1/1 w: draining 2 (a: PDB shop/db; b)\n"
	if out.String() != wantTTY {
		t.Errorf("terminal output %q\nwant %q", out.String(), wantTTY)
	}

	// JSON: one object per event with the fields a pipeline reads.
	out.Reset()
	if p, err = NewProgress(&out, "json"); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, ev := range events {
		ev.Time = at
		p.Observe(ev)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(events) {
		t.Fatalf("%d JSON lines for %d events", len(lines), len(events))
	}
	var pdb execute.Event
	if err := json.Unmarshal([]byte(lines[3]), &pdb); err != nil {
		t.Fatal(err)
	}
	if pdb.Type != "WaitingOnPDB" || pdb.StepID != "ztunnel/node/a/drain" || pdb.Index != 2 || pdb.Total != 3 || pdb.Node != "a" ||
		pdb.PDBs[0] != "shop/db" || pdb.Pods[0] != "shop/db-0" || !pdb.Time.Equal(at) {
		t.Errorf("WaitingOnPDB line %s decodes to %+v", lines[3], pdb)
	}
	var raw map[string]any
	_ = json.Unmarshal([]byte(lines[2]), &raw)
	for _, k := range []string{"time", "type", "step", "kind", "index", "total", "message", "done", "of"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("progress line %s lacks %q", lines[2], k)
		}
	}
	if _, err := NewProgress(&out, "xml"); ExitCode(err) != ExitUsage {
		t.Errorf("--log-format xml: %v, want a usage error", err)
	}
}

func TestVerdictTellsBlockedFromWaivable(t *testing.T) {
	f := func(code plan.Code, sev plan.Severity, waived bool) plan.Finding {
		return plan.Finding{Code: code, Severity: sev, Waived: waived, Object: mesh.ObjectRef{Kind: "Cluster", Name: "kubernetes"}}
	}
	cases := []struct {
		name     string
		findings []plan.Finding
		blocked  string
		args     []string
		want     int
		says     string
	}{
		{name: "a clean plan runs", findings: []plan.Finding{f("INFO_ONLY", plan.Info, false), f(plan.CodePDBBlocksDrain, plan.Waivable, true)}, want: ExitOK},
		{name: "a waivable finding needs a waiver, named in the command", findings: []plan.Finding{f(plan.CodePDBBlocksDrain, plan.Waivable, false)},
			args: []string{"--target", "1.31.4"}, want: ExitNeedsWaiver, says: "upgrade --context test --target 1.31.4 --waive PDB_BLOCKS_DRAIN"},
		{name: "earlier waivers are kept in the command", findings: []plan.Finding{f(plan.CodeTargetEndOfLife, plan.Waivable, false), f(plan.CodePDBBlocksDrain, plan.Waivable, true)},
			args: []string{"--waive", "PDB_BLOCKS_DRAIN"}, want: ExitNeedsWaiver, says: "upgrade --context test --waive PDB_BLOCKS_DRAIN,TARGET_END_OF_LIFE"},
		{name: "a blocked step is blocked, whatever can be waived", findings: []plan.Finding{f(plan.CodePDBBlocksDrain, plan.Waivable, false)}, blocked: "namespace payments uses it",
			want: ExitBlocked, says: "blocked steps last (namespace payments uses it) (waivable findings of code PDB_BLOCKS_DRAIN also stop it)"},
		{name: "a blocking finding is blocked", findings: []plan.Finding{f(plan.CodeCNIAheadOfControlPlane, plan.Blocking, false)}, want: ExitBlocked, says: "blocking findings of code CNI_AHEAD_OF_CONTROL_PLANE"},
	}
	for _, tc := range cases {
		c, _ := upgradeCommand(t, tc.args...)
		p := plan.New(plan.Metadata{Name: "p"})
		p.Findings = tc.findings
		p.Steps = []plan.Step{{ID: "first", Verify: &plan.Verification{}}, {ID: "last", Blocked: tc.blocked, Verify: &plan.Verification{}}}
		err := Verdict(p, nil, c)
		if got := ExitCode(err); got != tc.want || (tc.says != "" && !strings.Contains(fmt.Sprint(err), tc.says)) {
			t.Errorf("%s: %v (exit %d), want exit %d saying %q", tc.name, err, got, tc.want, tc.says)
		}
	}
	other := errors.New("invalid options")
	if err := Verdict(nil, other, NewCommand("x", "", nil)); err != other {
		t.Errorf("a planning error passes through, got %v", err)
	}
}

func TestPlanningFlagsBecomeUpgradeOptions(t *testing.T) {
	ctx := context.Background()
	snap, err := demo.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	charts := t.TempDir()
	for _, name := range []string{"base", "istiod", "cni", "ztunnel"} {
		if err := os.MkdirAll(filepath.Join(charts, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(charts, name, "Chart.yaml"), []byte("apiVersion: v2\nname: "+name+"\nversion: 1.0.0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wd, _ := os.Getwd()
	rel, _ := filepath.Rel(wd, charts)

	c, pf := upgradeCommand(t, "--target", "1.31.4", "--strategy", "in-place", "--batch-size", "3", "--drain-timeout", "20m",
		"--charts", rel, "--waive", "PDB_BLOCKS_DRAIN, TARGET_END_OF_LIFE", "--today", "2027-01-15")
	_ = c
	opts, err := pf.Options(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Target.String() != "1.31.4" || opts.Strategy != ambient.StrategyInPlace || opts.Charts.Dir != charts ||
		!opts.Today.Equal(time.Date(2027, 1, 15, 0, 0, 0, 0, time.UTC)) || len(opts.Waive) != 2 || opts.Waive[1] != plan.CodeTargetEndOfLife {
		t.Errorf("options %+v", opts)
	}
	if zt, ok := opts.Ztunnel.(ztunnel.NodeByNode); !ok || zt.BatchSize != 3 || zt.DrainTimeout != 20*time.Minute {
		t.Errorf("ztunnel %#v, want node-by-node, 3 nodes a batch, 20m drains", opts.Ztunnel)
	}
	if _, err := ambient.PlanUpgrade(snap, opts); err != nil && !errors.Is(err, ambient.ErrBlocked) {
		t.Errorf("the options do not plan: %v", err)
	}

	for _, args := range [][]string{
		{"--ztunnel", "in-place", "--batch-size", "2"},
		{"--ztunnel", "in-place", "--drain-timeout", "5m"},
		{"--ztunnel", "node-by-node", "--green-nodepools", "general"},
		{"--ztunnel", "blue-green", "--green-nodepools", "general", "--relabel", "n1"},
		{"-o", "xml"},
		{"--today", "tomorrow"},
		{"--charts", "ftp://mirror/charts"},
		{"--charts", t.TempDir()}, // a folder without the chart folders
		{"--target", "v1.31"},
	} {
		_, pf, err := parseUpgrade(args...)
		if err == nil {
			_, err = pf.Options(ctx, snap)
		}
		if ExitCode(err) != ExitUsage {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
	_, pf = upgradeCommand(t, "--ztunnel", "blue-green", "--green-nodepools", "general,batch", "--batch-size", "4")
	if opts, err := pf.Options(ctx, snap); err != nil {
		t.Errorf("--ztunnel blue-green: %v", err)
	} else if bg, ok := opts.Ztunnel.(ztunnel.BlueGreen); !ok || bg.BatchSize != 4 || strings.Join(bg.Capacity.NodePools, ",") != "general,batch" {
		t.Errorf("--ztunnel blue-green: %#v", opts.Ztunnel)
	}
	_, pf = upgradeCommand(t, "--ztunnel", "in-place")
	if opts, err := pf.Options(ctx, snap); err != nil || opts.Ztunnel != (ztunnel.InPlace{}) {
		t.Errorf("--ztunnel in-place: %v %#v", err, opts.Ztunnel)
	}
	for in, want := range map[string]ambient.ChartSource{
		"oci://registry.example.com/istio/": {OCI: "oci://registry.example.com/istio"},
		"https://charts.example.com/istio/": {Repository: "https://charts.example.com/istio"},
	} {
		if got, err := ParseCharts(in); err != nil || got.OCI != want.OCI || got.Repository != want.Repository || got.Dir != "" {
			t.Errorf("--charts %s: %+v %v, want %+v", in, got, err, want)
		}
	}
}

// index is a mirror's Helm repository index that serves 1.30.3, 1.31.1 and 1.31.2 only.
const index = `apiVersion: v1
entries:
` + `  base: [{version: 1.30.3, urls: [base-1.30.3.tgz]}, {version: 1.31.1, urls: [base-1.31.1.tgz]}, {version: 1.31.2, urls: [base-1.31.2.tgz]}]
  istiod: [{version: 1.30.3, urls: [x]}, {version: 1.31.1, urls: [x]}, {version: 1.31.2, urls: [x]}]
  cni: [{version: 1.30.3, urls: [x]}, {version: 1.31.1, urls: [x]}, {version: 1.31.2, urls: [x]}]
  ztunnel: [{version: 1.30.3, urls: [x]}, {version: 1.31.1, urls: [x]}, {version: 1.31.2, urls: [x]}]
  gateway: [{version: 1.30.3, urls: [x]}, {version: 1.31.1, urls: [x]}, {version: 1.31.2, urls: [x]}]
`

func TestTheTargetableVersionsComeFromTheChartRepositorysIndex(t *testing.T) {
	ctx := context.Background()
	snap, err := demo.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.Path)
		if r.URL.Path != "/istio/index.yaml" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(index))
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "istio-index.yaml")
	if err := os.WriteFile(file, []byte(index), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--charts", srv.URL + "/istio"},
		{"--charts", "oci://registry.example.com/istio", "--chart-index", file},
		{"--chart-index", srv.URL + "/istio/index.yaml"},
	} {
		_, pf := upgradeCommand(t, args...)
		opts, err := pf.Options(ctx, snap)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		// No --target: the newest patch of the next minor the mirror has, not the embedded data's 1.31.4.
		if opts.Target.String() != "1.31.2" {
			t.Errorf("%q: target %s, want 1.31.2 (the mirror's newest 1.31)", args, opts.Target)
		}
		if err := opts.Releases.Check(mesh.MustParseVersion("1.31.4")); err == nil {
			t.Errorf("%q: 1.31.4 is targetable, but the mirror does not have it", args)
		}
	}
	if len(asked) != 2 {
		t.Errorf("the index was asked for %v, want twice", asked)
	}
	_, pf := upgradeCommand(t, "--charts", srv.URL+"/elsewhere")
	if _, err := pf.Options(ctx, snap); err == nil || !strings.Contains(err.Error(), "--chart-index FILE") {
		t.Errorf("an unreadable index: %v, want an error that offers --chart-index", err)
	}
}

func TestHelpShowsEveryFlagWithAnExampleTheDumpCommandsAndTheExitCodes(t *testing.T) {
	var out bytes.Buffer
	c := NewCommand("plan-upgrade", "Plans.", &out)
	var src Source
	src.Register(c, true)
	var pf Plan
	pf.Register(c)
	c.Sections = append(c.Sections, ExitCodesSection("the plan is runnable"))
	if err := c.Parse([]string{"--help"}); !errors.Is(err, flag.ErrHelp) || ExitCode(err) != ExitOK {
		t.Fatalf("--help: %v", err)
	}
	help := out.String()
	c.fs.VisitAll(func(f *flag.Flag) {
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		i := strings.Index(help, "\n  "+dash+f.Name)
		if i < 0 {
			t.Errorf("--help does not list %s%s", dash, f.Name)
			return
		}
		rest := help[i+1:]
		if j := strings.Index(rest[1:], "\n  -"); j >= 0 {
			rest = rest[:j+1]
		}
		if !strings.Contains(rest, "example: plan-upgrade "+dash+f.Name) {
			t.Errorf("--help shows no example of %s%s:\n%s", dash, f.Name, rest)
		}
	})
	for _, cmd := range observe.DumpCommands(observe.DumpOptions{}) {
		if !strings.Contains(help, "  "+cmd.String()+"\n") {
			t.Errorf("--help lacks the dump command %s", cmd)
		}
	}
	for _, code := range []string{"  0  ", "  1  ", "  2  ", "  3  blocked", "  4  not runnable until waived"} {
		if !strings.Contains(help, code) {
			t.Errorf("--help does not document exit code %q", code)
		}
	}
}

func TestCommandLinesQuoteWhatTheShellWouldSplit(t *testing.T) {
	inFolderWith(t, "my configs/k")
	c, _ := upgradeCommand(t, "--kubeconfig", "my configs/k", "--waive", "PDB_BLOCKS_DRAIN,TARGET_END_OF_LIFE", "-o", "yaml", "--dry-run")
	got := c.Line([]string{"dry-run"}, "--resume")
	want := `upgrade --kubeconfig 'my configs/k' -o yaml --waive PDB_BLOCKS_DRAIN,TARGET_END_OF_LIFE --resume`
	if got != want {
		t.Errorf("Line = %s\nwant    %s", got, want)
	}
	if err := c.AtMostOne("dry-run", "kubeconfig"); ExitCode(err) != ExitUsage {
		t.Errorf("AtMostOne of two given flags: %v", err)
	}
	pc := NewCommand("plan-upgrade", "test", &bytes.Buffer{})
	var src Source
	src.Register(pc, true)
	if err := pc.Parse([]string{"--from-dir", t.TempDir(), "--context", "c"}); ExitCode(err) != ExitUsage {
		t.Errorf("--from-dir with --context: %v, want a usage error", err)
	}
}

func TestChartsFolderTakesOtherVersionsBesideTheTarget(t *testing.T) {
	dir := t.TempDir()
	for _, chart := range []string{"base", "istiod", "cni", "ztunnel", "ztunnel@1.31.4", "istiod@1.31.4", "notes@x"} {
		if err := os.MkdirAll(filepath.Join(dir, chart), 0o755); err != nil {
			t.Fatal(err)
		}
		if chart == "notes@x" {
			continue // not a chart folder: left alone
		}
		if err := os.WriteFile(filepath.Join(dir, chart, "Chart.yaml"), []byte("name: x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src, err := ParseCharts(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"ztunnel@1.31.4": filepath.Join(dir, "ztunnel@1.31.4"), "istiod@1.31.4": filepath.Join(dir, "istiod@1.31.4")}
	if d := cmp.Diff(want, src.Paths); d != "" || src.Dir != dir {
		t.Errorf("ParseCharts(%s) = dir %s, paths (-want +got):\n%s", dir, src.Dir, d)
	}
	if r := src.Ref("ztunnel", mesh.MustParseVersion("1.31.4")); r.Path != want["ztunnel@1.31.4"] {
		t.Errorf("the running version's chart comes from %s, want %s", r.Path, want["ztunnel@1.31.4"])
	}
}

func TestRBACFlagsWriteRolesForExactlyWhatTheRunNeeds(t *testing.T) {
	for _, tc := range []struct{ name, file, account string }{
		{"an account without a namespace", "x.yaml", "upgrader"},
		{"an account with two slashes", "x.yaml", "a/b/c"},
		{"an account without --rbac", "", "platform/upgrader"},
	} {
		if err := (&RBAC{File: tc.file, Account: tc.account}).Check(); !errors.Is(err, ErrUsage) {
			t.Errorf("%s: %v, want a usage error", tc.name, err)
		}
	}
	ctx := context.Background()
	snap, err := demo.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ambient.PlanUpgrade(snap, ambient.UpgradeOptions{Target: mesh.MustParseVersion("1.31.4"), Today: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)})
	if p == nil {
		t.Fatal(err)
	}
	hash, err := execute.PlanHash(p)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := execute.New(fake.NewClientBuilder().WithScheme(observe.Scheme()).Build(), execute.Options{
		Snapshot: func(context.Context) (*mesh.Snapshot, error) { return snap, nil }, Permissions: RunPermissions(snap, hash)})
	if err != nil {
		t.Fatal(err)
	}
	r := RBAC{File: filepath.Join(t.TempDir(), "rbac.yaml"), Account: "platform/upgrader"}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	var said bytes.Buffer
	if err := r.Write(&said, ex, p, snap); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(r.File)
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	for _, want := range []string{"kind: ClusterRole\n", "kind: ClusterRoleBinding\n", "kind: RoleBinding\n", `namespace: "istio-system"`,
		`name: "upgrader"`, `"poddisruptionbudgets"`, `"events"`, `"leases"`, `name: "ambientkit-plan-` + strings.TrimPrefix(hash, "sha256:")[:12] + `"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the RBAC written lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "not covered") {
		t.Errorf("the derivation does not cover every step:\n%s", out)
	}
	if line := said.String(); !strings.Contains(line, "kubectl apply -f "+r.File) || !strings.Contains(line, "platform/upgrader") {
		t.Errorf("it says %q, want how to apply it and to whom it is bound", line)
	}
	// A dry run records no Events, so it needs no right to write them.
	if RunPermissions(snap, "").Len() >= RunPermissions(snap, hash).Len() {
		t.Error("a dry run needs as much as a real one: the Events permissions are still in")
	}
}
