//go:build e2e

package runbook

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/io/execute/helmsdk"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/e2e/internal/harness"
	"github.com/ambientkit/ambientkit/e2e/internal/upgrade"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/runbook"
)

// commandTimeout bounds each command of a runbook run by hand, in case a printed bound does not
// work: the longest timeout a step prints (drains, 600s) and a margin.
const commandTimeout = 11 * time.Minute

// twins is one case of the suite: a plan made on two identical clusters, run by hand on the first
// and by the executor on the second.
type twins struct {
	// name prefixes the clusters' names.
	name string
	// cidrs are the loopback Service ranges of the two clusters.
	cidrs        [2]string
	nodesPerPool int
	// plan makes the plan on a cluster (and fails the test unless it is runnable).
	plan func(ctx context.Context, t *testing.T, h *harness.Harness) *plan.Plan
	// minCommands is the fewest commands and checks the runbook must print.
	minCommands int
	// boundedWait runs a wait of the runbook to its bound (waitToItsBound) after the run by hand.
	boundedWait bool
}

// runTwins runs the case: by hand on one cluster, by the executor on the other, one after the
// other (each cluster is deleted before the next starts), and returns each run's end state; nil
// for a run that failed.
func runTwins(ctx context.Context, t *testing.T, c twins) (byHand, byExecutor *endState) {
	bin := os.Getenv("E2E_BIN_DIR")
	if bin == "" {
		t.Fatal("E2E_BIN_DIR is not set: run through hack/e2e.sh, which builds kubectl and helm there")
	}
	steps := 0
	t.Run("the runbook run by hand", func(t *testing.T) {
		h := newCluster(t, ctx, c.name+"-hand", c.cidrs[0], c.nodesPerPool)
		p := c.plan(ctx, t, h)
		steps = len(p.Steps)
		env := runByHand(ctx, t, h, p, bin, c.minCommands)
		if c.boundedWait && !t.Failed() {
			waitToItsBound(ctx, t, h, p, env)
		}
		byHand = captureState(ctx, t, h)
	})
	if byHand == nil {
		return nil, nil
	}
	t.Run("the executor's run", func(t *testing.T) {
		h := newCluster(t, ctx, c.name+"-exec", c.cidrs[1], c.nodesPerPool)
		p := c.plan(ctx, t, h)
		if len(p.Steps) != steps {
			t.Errorf("the twin cluster's plan has %d steps, the first %d", len(p.Steps), steps)
		}
		applyWithExecutor(ctx, t, h, p)
		byExecutor = captureState(ctx, t, h)
	})
	return byHand, byExecutor
}

// runByHand renders p's full Markdown runbook (kept in the run folder as runbook.md), extracts its
// commands and checks (Extract) and runs each in order with bash -e -o pipefail, kubectl and helm
// from bin: the first that exits non-zero fails the test. It returns the commands' environment.
func runByHand(ctx context.Context, t *testing.T, h *harness.Harness, p *plan.Plan, bin string, minCommands int) []string {
	t.Helper()
	var md bytes.Buffer
	if err := runbook.RenderWith(&md, p, runbook.Options{Full: true}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.Cluster.RunDir(), "runbook.md"), md.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmds := Extract(md.String())
	if len(cmds) < minCommands {
		t.Fatalf("extracted %d commands, want at least %d", len(cmds), minCommands)
	}
	printed := map[string]bool{}
	for _, c := range cmds {
		if c.What == Run {
			printed[c.Step] = true
		}
	}
	for _, s := range p.Steps {
		switch s.Kind() {
		case plan.KindHealthGate, plan.KindApproval, plan.KindVerify:
		default:
			if !printed[s.ID] {
				t.Errorf("the runbook prints no command for step %s (%s)", s.ID, s.Kind())
			}
		}
	}
	dir := t.TempDir()
	env := append(os.Environ(),
		"KUBECONFIG="+h.Cluster.Kubeconfig(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HELM_CACHE_HOME="+filepath.Join(dir, "helm-cache"),
		"HELM_CONFIG_HOME="+filepath.Join(dir, "helm-config"),
		"HELM_DATA_HOME="+filepath.Join(dir, "helm-data"),
	)
	for i, c := range cmds {
		t0 := time.Now()
		cctx, cancel := context.WithTimeout(ctx, commandTimeout)
		sh := exec.CommandContext(cctx, "bash", "-e", "-o", "pipefail", "-c", c.Text)
		sh.Env, sh.Dir = env, dir
		out, err := sh.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("command %d of %d (step %s, %s) exits %v after %s:\n%s\noutput:\n%s", i+1, len(cmds), c.Step, c.What, err,
				time.Since(t0).Round(time.Millisecond), c.Text, out)
		}
		h.Logf("runbook %d/%d %s %s ok in %s", i+1, len(cmds), c.Step, c.What, time.Since(t0).Round(time.Millisecond))
	}
	return env
}

// waitToItsBound runs one wait of the runbook to its bound: the plan's first wait for ztunnel on a
// node, asked for a version no pod runs and given 6s. The printed loop must end by itself soon
// after, fail, and say on stderr what still does not hold and what to do.
func waitToItsBound(ctx context.Context, t *testing.T, h *harness.Harness, p *plan.Plan, env []string) {
	t.Helper()
	for _, s := range p.Steps {
		if s.WaitFor == nil || s.WaitFor.Check.Type != plan.CheckNodeAgentReady {
			continue
		}
		a, err := plan.ArgsOf[plan.NodeAgentReadyArgs](s.WaitFor.Check)
		if err != nil || a.Node == "" {
			continue
		}
		a.Version = "0.0.1"
		never := s
		never.WaitFor = &plan.WaitFor{TimeoutSeconds: 6,
			Check: plan.NewCheck(s.WaitFor.Check.Object, a, "ztunnel 0.0.1 is ready on "+a.Node)}
		cmds := plan.Commands(&never)
		if len(cmds) != 1 {
			t.Fatalf("the wait prints %d commands, want 1: %q", len(cmds), cmds)
		}
		t0 := time.Now()
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		sh := exec.CommandContext(cctx, "bash", "-e", "-o", "pipefail", "-c", cmds[0])
		var stderr bytes.Buffer
		sh.Env, sh.Stderr = env, &stderr
		err = sh.Run()
		took := time.Since(t0)
		h.Logf("a wait run to its bound (6s): %v after %s; stderr: %s", err, took.Round(time.Millisecond), stderr.String())
		if err == nil {
			t.Errorf("a wait for a ztunnel version no pod runs exited 0:\n%s", cmds[0])
		}
		if cctx.Err() != nil || took > time.Minute {
			t.Errorf("a wait bounded at 6s ran %s: its loop has no working bound:\n%s", took, cmds[0])
		}
		if want := "gave up after 6s: ztunnel 0.0.1 is ready on " + a.Node + " still does not hold; find out why, fix it, and run this again"; !strings.Contains(stderr.String(), want) {
			t.Errorf("the wait's stderr lacks %q:\n%s", want, stderr.String())
		}
		return
	}
	t.Fatal("the plan has no wait for ztunnel on a node to run to its bound")
}

// applyWithExecutor applies p with the executor as the e2e upgrade does (the Helm SDK adapter, the
// mesh-health probe), approving every approval; health gates settle 1s.
func applyWithExecutor(ctx context.Context, t *testing.T, h *harness.Harness, p *plan.Plan) {
	t.Helper()
	for i := range p.Steps {
		if g := p.Steps[i].HealthGate; g != nil {
			g.SettleSeconds = 1
		}
	}
	live := func(ctx context.Context) (*mesh.Snapshot, error) {
		return observe.Live(ctx, h.Client, observe.Options{ServerVersion: h.Clientset.Discovery()})
	}
	hd := t.TempDir()
	helm, err := helmsdk.New(helmsdk.Options{Config: h.RestConfig,
		RepositoryCache: hd + "/repository", RepositoryConfig: hd + "/repositories.yaml", RegistryConfig: hd + "/registry.json"})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := execute.New(h.Client, execute.Options{Gates: ambient.Gates(), Helm: helm, Snapshot: live,
		Identity: "runbook-e2e", PollInterval: time.Second,
		Probes:  map[string]execute.Probe{"mesh-health": upgrade.MeshHealth(live)},
		Approve: func(context.Context, plan.Step) (bool, error) { return true, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ex.Apply(ctx, p, execute.ApplyOptions{}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}
