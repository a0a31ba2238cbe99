//go:build e2e

package e2e

// This file sorts first: TestExamples runs the example programs before any other suite, and leaves
// the cluster exactly as it found it (it plans and dry-runs only; the last assessment proves it). The
// real apply of an upgrade is TestUpgrade's, which runs last (zz_upgrade_test.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/e2e/internal/harness"
)

// The exit codes the examples document in --help, as a script reads them.
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitBlocked     = 3
	exitNeedsWaiver = 4
)

// examplesRun is what TestExamples shares between its assessments.
type examplesRun struct {
	bin        string // folder of the built example binaries
	env        []string
	charts     map[string]string // stamped chart folders by version
	before     *mesh.Snapshot
	waive      string // the codes the in-place plan asked to waive
	inPlace    []string
	stepsTotal int
}

type examplesKey struct{}

func examples(ctx context.Context, t *testing.T) *examplesRun {
	x, ok := ctx.Value(examplesKey{}).(*examplesRun)
	if !ok {
		t.Fatal("the examples setup did not run")
	}
	return x
}

// result is what one run of an example printed and how it ended.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout (tail)\n%s\n--- stderr\n%s", r.code, tailLines(r.stdout, 25), tailLines(r.stderr, 40))
}

func tailLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = append([]string{"..."}, l[len(l)-n:]...)
	}
	return strings.Join(l, "\n")
}

// run runs one example binary to its end, its stdout and stderr pipes (never a terminal).
func (x *examplesRun) run(ctx context.Context, t *testing.T, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(x.bin, name), args...)
	cmd.Env, cmd.Stdout, cmd.Stderr, cmd.Stdin = x.env, &stdout, &stderr, strings.NewReader("")
	t0 := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", name, err)
	}
	t.Logf("%s %s: exit %d in %s", name, strings.Join(args, " "), r.code, time.Since(t0).Round(10*time.Millisecond))
	return r
}

// TestExamples runs examples/plan-upgrade and examples/upgrade, built as a user builds them, against
// the live cluster: --help, a blocked plan, a plan that needs a waiver, a clean dry run with plain
// lines and with JSON lines, a chart version a mirror lacks; then checks nothing changed.
func TestExamples(t *testing.T) {
	kubeconfig := h.Cluster.Kubeconfig()
	f := features.New("the example programs against the live cluster").
		WithLabel("feature", "examples").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			x := &examplesRun{bin: t.TempDir(), charts: map[string]string{}}
			t0 := time.Now()
			build := exec.CommandContext(ctx, "go", "build", "-o", x.bin, "./examples/plan-upgrade", "./examples/upgrade")
			build.Dir = ".." // the module root: go test runs in the package folder
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build the examples: %v\n%s", err, out)
			}
			t.Logf("examples built in %s", time.Since(t0).Round(100*time.Millisecond))
			helmHome := t.TempDir() // Helm's caches and configuration stay out of the home folder
			x.env = append(os.Environ(), "HELM_CACHE_HOME="+helmHome+"/cache", "HELM_CONFIG_HOME="+helmHome+"/config", "HELM_DATA_HOME="+helmHome+"/data", "TERM=xterm")
			// The charts of releases 1.30.8 and 1.31.4, stamped from the same sources as the installation's,
			// in the layout `helm pull --untar` leaves: <dir>/<chart>.
			for _, v := range []string{"1.30.8", "1.31.4"} {
				dir := filepath.Join(t.TempDir(), "charts-"+v)
				if _, err := h.Helm.StampCharts(dir, v); err != nil {
					t.Fatal(err)
				}
				x.charts[v] = dir
			}
			var err error
			if x.before, err = observe.Live(ctx, h.Client, observe.Options{ServerVersion: h.Clientset.Discovery()}); err != nil {
				t.Fatal(err)
			}
			x.inPlace = []string{"--kubeconfig", kubeconfig, "--strategy", "in-place", "--target", "1.30.8", "--batch-size", "12",
				"--charts", x.charts["1.30.8"], "--today", "2026-11-01"}
			return context.WithValue(ctx, examplesKey{}, x)
		}).
		Assess("--help explains every flag and shows the offline dump commands", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			x := examples(ctx, t)
			r := x.run(ctx, t, "plan-upgrade", "--help")
			if r.code != exitOK {
				t.Fatalf("plan-upgrade --help: %s", r)
			}
			for _, want := range []string{"example: plan-upgrade --charts", "example: plan-upgrade --batch-size", "kubectl version -o yaml > version.yaml",
				"kubectl get secrets -n istio-system -l owner=helm -o yaml > helm-releases.istio-system.yaml", "  3  blocked", "  4  not runnable until waived"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("plan-upgrade --help lacks %q", want)
				}
			}
			if r := x.run(ctx, t, "upgrade", "--ztunnel", "in-place", "--batch-size", "2", "--kubeconfig", kubeconfig); r.code != exitUsage ||
				!strings.Contains(r.stderr, "--batch-size applies to --ztunnel node-by-node") {
				t.Errorf("--batch-size with --ztunnel in-place: %s; want exit %d", r, exitUsage)
			}
			return ctx
		}).
		Assess("a plan with a blocked step exits with the blocked code and says how to plan again", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			x := examples(ctx, t)
			// Revisioned 1.30.3 → 1.31.4: namespace payments and a policy still name revision 1-30-3, so
			// its removal is blocked until their owner moves them (TestUpgrade does, later).
			r := x.run(ctx, t, "plan-upgrade", "--kubeconfig", kubeconfig, "--target", upgradeVersion, "--charts", x.charts[upgradeVersion])
			if r.code != exitBlocked {
				t.Fatalf("plan-upgrade of a plan with a blocked step: %s; want exit %d", r, exitBlocked)
			}
			for _, want := range []string{"blocked steps istiod/" + harness.Revision + "/remove", "revision " + harness.Revision + " is still referred to", "plan again: "} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			// The runbook installs from the local charts, as an air-gapped cluster would.
			if want := "helm install istiod-" + upgradeRevision + " " + filepath.Join(x.charts[upgradeVersion], "istiod"); !strings.Contains(r.stdout, want) {
				t.Errorf("the runbook lacks %q", want)
			}
			if r := x.run(ctx, t, "upgrade", "--kubeconfig", kubeconfig, "--target", upgradeVersion, "--charts", x.charts[upgradeVersion], "--dry-run", "--yes",
				"--plan-file", filepath.Join(t.TempDir(), "blocked.plan.yaml")); r.code != exitBlocked {
				t.Errorf("upgrade --dry-run of a blocked plan: %s; want exit %d", r, exitBlocked)
			}
			return ctx
		}).
		Assess("waivable findings exit with the waiver code, naming the codes to waive", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			x := examples(ctx, t)
			r := x.run(ctx, t, "plan-upgrade", append(x.inPlace, "-o", "json")...)
			if r.code != exitNeedsWaiver {
				t.Fatalf("plan-upgrade in place to 1.30.8: %s; want exit %d", r, exitNeedsWaiver)
			}
			m := regexp.MustCompile(`plan again with: .* --waive ([A-Z_,]+)\n`).FindStringSubmatch(r.stderr)
			if m == nil {
				t.Fatalf("stderr names no --waive command:\n%s", r.stderr)
			}
			x.waive = m[1]
			p, err := plan.Decode([]byte(r.stdout))
			if err != nil {
				t.Fatalf("-o json does not decode: %v", err)
			}
			for _, f := range plan.Stopping(p.Findings) {
				if f.Severity != plan.Waivable || !strings.Contains(","+x.waive+",", ","+string(f.Code)+",") {
					t.Errorf("stopping finding %s is not among the codes to waive %s", f, x.waive)
				}
			}
			x.stepsTotal = len(p.Steps)
			t.Logf("the in-place plan has %d steps and asks to waive %s", len(p.Steps), x.waive)
			return ctx
		}).
		Assess("a clean dry run exits 0 and prints one plain line per event", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			x := examples(ctx, t)
			planFile := filepath.Join(t.TempDir(), "in-place.plan.yaml")
			r := x.run(ctx, t, "upgrade", append(x.inPlace, "--waive", x.waive, "--dry-run", "--plan-file", planFile)...)
			if r.code != exitOK {
				t.Fatalf("upgrade --dry-run: %s", r)
			}
			if strings.ContainsAny(r.stdout+r.stderr, "\x1b\r") {
				t.Errorf("terminal control codes in piped output:\n%q", tailLines(r.stdout, 5))
			}
			dry := 0
			for _, l := range strings.Split(r.stdout, "\n") {
				if strings.Contains(l, "] DryRun ") {
					dry++
				}
			}
			if dry != x.stepsTotal || !strings.Contains(r.stdout, "RunFinished: plan ") || !strings.Contains(r.stdout, "dry run done: ") || !strings.Contains(r.stdout, "nothing was changed") {
				t.Errorf("%d DryRun lines for %d steps; output:\n%s", dry, x.stepsTotal, tailLines(r.stdout, 15))
			}
			if !strings.Contains(r.stdout, "would evict") || !strings.Contains(r.stdout, "would upgrade Helm release istio-system/istiod-"+harness.Revision) {
				t.Errorf("the dry run does not say what the drains and the istiod upgrade would do:\n%s", tailLines(r.stdout, 15))
			}
			b, err := os.ReadFile(planFile)
			if err != nil {
				t.Fatal(err)
			}
			if p, err := plan.Decode(b); err != nil || len(p.Steps) != x.stepsTotal {
				t.Errorf("saved plan: %v", err)
			}
			return ctx
		}).
		Assess("--log-format json writes one JSON object per event on stdout", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			x := examples(ctx, t)
			r := x.run(ctx, t, "upgrade", append(x.inPlace, "--waive", x.waive, "--dry-run", "--log-format", "json",
				"--plan-file", filepath.Join(t.TempDir(), "p.yaml"))...)
			if r.code != exitOK {
				t.Fatalf("upgrade --dry-run --log-format json: %s", r)
			}
			types := map[string]int{}
			for i, l := range strings.Split(strings.TrimRight(r.stdout, "\n"), "\n") {
				var ev execute.Event // the event's wire form, read back
				if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Type == "" || ev.Time.IsZero() {
					t.Fatalf("stdout line %d is not a JSON event (%v): %q", i+1, err, l)
				}
				types[string(ev.Type)]++
				if ev.Type == execute.EventDryRun && (ev.StepID == "" || ev.Index == 0 || ev.Total != x.stepsTotal || len(ev.Changes) == 0) {
					t.Errorf("DryRun event %q lacks its step, position or changes", l)
				}
			}
			if types["RunStarted"] != 1 || types["DryRun"] != x.stepsTotal || types["RunFinished"] != 1 {
				t.Errorf("event types %v, want one RunStarted, %d DryRun, one RunFinished", types, x.stepsTotal)
			}
			if !strings.Contains(r.stderr, "# upgrade Istio "+harness.IstioVersion+" → 1.30.8") {
				t.Errorf("the plan should go to stderr with --log-format json")
			}
			return ctx
		}).
		Assess("a chart version the mirror lacks stops the run before its first step", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			x := examples(ctx, t)
			// A mirror on the loopback whose index has every chart at 1.30.8 but istiod, which it has up to
			// 1.30.7; the versions to plan for come from a complete index (--chart-index).
			full, behind := helmIndex("1.30.8", ""), helmIndex("1.30.8", "istiod")
			mirror := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/istio/index.yaml" {
					http.NotFound(w, r)
					return
				}
				_, _ = w.Write([]byte(behind))
			}))
			defer mirror.Close()
			index := filepath.Join(t.TempDir(), "istio-index.yaml")
			if err := os.WriteFile(index, []byte(full), 0o644); err != nil {
				t.Fatal(err)
			}
			args := append([]string{}, x.inPlace...)
			for i, a := range args {
				if a == "--charts" {
					args[i+1] = mirror.URL + "/istio"
				}
			}
			r := x.run(ctx, t, "upgrade", append(args, "--chart-index", index, "--waive", x.waive, "--dry-run", "--plan-file", filepath.Join(t.TempDir(), "p.yaml"))...)
			if r.code != exitError {
				t.Fatalf("upgrade --dry-run against a mirror without istiod 1.30.8: %s", r)
			}
			for _, want := range []string{"chart version missing from its source", "chart istiod 1.30.8 from " + mirror.URL + "/istio", "the newest it has is 1.30.7",
				"next: nothing was changed: plan again with a chart source that has that version"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			if strings.Contains(r.stdout, "] DryRun ") {
				t.Errorf("a step ran before the chart check:\n%s", tailLines(r.stdout, 5))
			}
			return ctx
		}).
		Assess("the cluster is as the examples found it", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			x := examples(ctx, t)
			after, err := observe.Live(ctx, h.Client, observe.Options{ServerVersion: h.Clientset.Discovery()})
			if err != nil {
				t.Fatal(err)
			}
			if a, b := x.before.Fingerprint(), after.Fingerprint(); a != b {
				t.Errorf("the mesh's fingerprint moved from %s to %s", a, b)
			}
			var cms corev1.ConfigMapList
			if err := h.Client.List(ctx, &cms, client.InNamespace(harness.IstioNamespace)); err != nil {
				t.Fatal(err)
			}
			for _, cm := range cms.Items {
				if strings.HasPrefix(cm.Name, "ambientkit-journal-") {
					t.Errorf("a dry run left journal %s", cm.Name)
				}
			}
			var lease coordinationv1.Lease
			if err := h.Client.Get(ctx, client.ObjectKey{Namespace: harness.IstioNamespace, Name: execute.LockName}, &lease); !apierrors.IsNotFound(err) {
				t.Errorf("a dry run took the Lease (%v)", err)
			}
			var evs eventsv1.EventList
			if err := h.Client.List(ctx, &evs, client.InNamespace(harness.IstioNamespace)); err != nil {
				t.Fatal(err)
			}
			for _, e := range evs.Items {
				if e.ReportingController == execute.EventsController {
					t.Errorf("a dry run recorded Event %s (%s)", e.Name, e.Reason)
				}
			}
			return ctx
		})
	testenv.Test(t, f.Feature())
}

// helmIndex is a Helm repository index serving the Istio charts at 1.30.3, 1.30.7 and version, except
// chart lacking, which stops at 1.30.7.
func helmIndex(version, lacking string) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n")
	for _, chart := range []string{"base", "istiod", "cni", "ztunnel", "gateway"} {
		fmt.Fprintf(&b, "  %s:\n", chart)
		for _, v := range []string{"1.30.3", "1.30.7", version} {
			if chart == lacking && v == version {
				continue
			}
			fmt.Fprintf(&b, "  - {name: %s, version: %s, urls: [%s-%s.tgz]}\n", chart, v, chart, v)
		}
	}
	return b.String()
}
