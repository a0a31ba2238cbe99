package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"github.com/ambientkit/ambientkit/migrate"
)

// genMesh is one generated namespace to migrate, on the installation of testdata/base.yaml.
type genMesh struct {
	yaml string
	opts migrate.Options
	desc string
	// applyAll: apply every proposal of the readiness report.
	applyAll bool
}

// generateMesh draws a sidecar namespace "gen": its injection label, 1 to 4 workloads (Deployments
// and StatefulSets, some behind Services), and any of an L4 policy, an L7 ALLOW policy (deny-all
// under ztunnel), an L7 DENY policy, a VirtualService and a DestinationRule; no waypoint, an
// existing one the namespace is labelled with, or one the plan creates; the proposals applied or
// not; batch sizes 0 to 3.
func generateMesh(r *rand.Rand) genMesh {
	var b strings.Builder
	var desc []string
	label := "istio-injection: enabled"
	if r.IntN(2) == 0 {
		label = "istio.io/rev: default"
	}
	waypoint := []string{"none", "existing", "created"}[r.IntN(3)]
	nsLabels := label
	if waypoint == "existing" {
		nsLabels += ", istio.io/use-waypoint: wp"
		fmt.Fprintf(&b, `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: wp, namespace: gen}
spec: {gatewayClassName: istio-waypoint, listeners: [{name: mesh, port: 15008, protocol: HBONE}]}
status: {conditions: [{type: Programmed, status: "True"}]}
---
`)
	}
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Namespace\nmetadata: {name: gen, labels: {%s}}\n---\n", nsLabels)
	desc = append(desc, label, "waypoint "+waypoint)
	n := 1 + r.IntN(4)
	var services []string
	for i := 0; i < n; i++ {
		app := fmt.Sprintf("app%d", i)
		owner := fmt.Sprintf("{apiVersion: apps/v1, kind: ReplicaSet, name: %s-5d6f7a8b9, controller: true}", app)
		name, hash := app+"-5d6f7a8b9-x", ", pod-template-hash: 5d6f7a8b9"
		if r.IntN(4) == 0 {
			owner, name, hash = fmt.Sprintf("{apiVersion: apps/v1, kind: StatefulSet, name: %s, controller: true}", app), app+"-0", ""
		}
		fmt.Fprintf(&b, `apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: gen
  labels: {app: %s%s}
  annotations: {sidecar.istio.io/status: '{"revision":"default"}'}
  ownerReferences: [%s]
spec:
  nodeName: node-a
  containers: [{name: app, image: gen/app:1}, {name: istio-proxy, image: docker.io/istio/proxyv2:1.30.3}]
status: {phase: Running, conditions: [{type: Ready, status: "True"}]}
---
`, name, app, hash, owner)
		if i == 0 || r.IntN(2) == 0 {
			services = append(services, app)
			fmt.Fprintf(&b, "apiVersion: v1\nkind: Service\nmetadata: {name: %s, namespace: gen}\nspec: {selector: {app: %s}, ports: [{name: http, port: 8080}]}\n---\n", app, app)
		}
	}
	desc = append(desc, fmt.Sprintf("%d workloads, %d Services", n, len(services)))
	policies := map[string]string{
		"l4":        "spec: {selector: {matchLabels: {app: app0}}, rules: [{to: [{operation: {ports: [\"8080\"]}}]}]}",
		"allow-get": "spec: {selector: {matchLabels: {app: app0}}, rules: [{to: [{operation: {methods: [GET]}}]}]}",
		"no-delete": "spec: {selector: {matchLabels: {app: app0}}, action: DENY, rules: [{to: [{operation: {methods: [DELETE]}}]}]}",
	}
	for _, name := range []string{"l4", "allow-get", "no-delete"} {
		if r.IntN(2) == 0 {
			desc = append(desc, "policy "+name)
			fmt.Fprintf(&b, "apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: %s, namespace: gen}\n%s\n---\n", name, policies[name])
		}
	}
	if r.IntN(2) == 0 {
		desc = append(desc, "VirtualService")
		fmt.Fprintf(&b, "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: app0, namespace: gen}\nspec: {hosts: [app0], http: [{timeout: 5s, route: [{destination: {host: app0}}]}]}\n---\n")
	}
	if r.IntN(3) == 0 {
		desc = append(desc, "DestinationRule")
		fmt.Fprintf(&b, "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: app0, namespace: gen}\nspec: {host: app0, trafficPolicy: {connectionPool: {tcp: {maxConnections: 10}}}}\n---\n")
	}
	opts := migrate.Options{BackupFile: "/var/backups/gen.json", BatchSize: r.IntN(4), Waive: plan.AllCodes()}
	if waypoint == "created" {
		opts.Waypoint, opts.CreateWaypoint = &migrate.WaypointRef{Name: "wp"}, true
	}
	applyAll := r.IntN(3) > 0
	if applyAll {
		desc = append(desc, "proposals applied")
	}
	return genMesh{yaml: b.String(), opts: opts, desc: strings.Join(desc, ", "), applyAll: applyAll}
}

// orderRank is where a step stands in the procedure the upstream guide requires (istio.io
// docs/ambient/migrate: activate waypoints, label dataplane-mode, remove the injection labels,
// restart, remove the sidecar-era policies, validate), with the plan's own steps slotted in: the
// waypoint, its readiness and the proposals before use-waypoint, the gateways' labels just before
// the injection labels go. The backup and the deny window's approval have no rank: checkOrder
// places them (after the restart, or right before it when there is a deny window to shorten).
func orderRank(id string) (phase string, rank int) {
	phase, rest, _ := strings.Cut(id, "/")
	if phase == "waypoint" && rest != "" {
		phase = id
	}
	ranks := map[string]int{"prechecks": 0, "waypoint": 1, "waypoint/programmed": 2, "apply": 3, "use-waypoint": 4, "waypoint/accepted": 4,
		"dataplane-mode": 5, "pin-gateways": 6, "injection": 7, "restart": 8, "delete": 9, "validate": 10, "health": 11, "backup": -2, "deny-window": -2}
	r, ok := ranks[phase]
	if !ok {
		return phase, -1
	}
	return phase, r
}

// checkOrder states the order as a property of one plan; it returns what is wrong.
func checkOrder(p *plan.Plan, ns string) error {
	prefix := "migrate/" + ns + "/"
	var ids []string
	pos := map[string]int{}
	last, lastID := -1, ""
	for i, st := range p.Steps {
		id := strings.TrimPrefix(st.ID, prefix)
		ids = append(ids, id)
		if i > 0 && (len(st.DependsOn) == 0 || st.DependsOn[len(st.DependsOn)-1] != p.Steps[i-1].ID) {
			return fmt.Errorf("step %s does not wait for %s before it: the executor could run them out of order", st.ID, p.Steps[i-1].ID)
		}
		phase, r := orderRank(id)
		if _, seen := pos[phase]; !seen {
			pos[phase] = i
		}
		switch {
		case r == -1:
			return fmt.Errorf("step %s is of no phase of the procedure", id)
		case r == -2:
			continue
		case r < last:
			return fmt.Errorf("step %s comes after %s: the procedure is use-waypoint → dataplane-mode → injection removal → restart → backup → deletions → validate (steps %v)", id, lastID, ids)
		}
		last, lastID = r, id
	}
	for _, must := range []string{"prechecks", "dataplane-mode", "injection", "backup", "validate", "health"} {
		if _, ok := pos[must]; !ok {
			return fmt.Errorf("no %s step (steps %v)", must, ids)
		}
	}
	if pos["prechecks"] != 0 {
		return fmt.Errorf("the prechecks do not come first (steps %v)", ids)
	}
	b, window := pos["backup"], false
	if w, ok := pos["deny-window"]; ok {
		window = true
		if r, ok := pos["restart"]; !ok || w != r-2 || b != r-1 || pos["delete"] != r+1 {
			return fmt.Errorf("a deny window is the approval, then the backup, right before the restart, and the first deletion right after it (steps %v)", ids)
		}
	}
	if d, ok := pos["delete"]; ok && b > d {
		return fmt.Errorf("a deletion comes before the backup (steps %v)", ids)
	}
	if !window && (b < pos["injection"] || b < pos["restart"]) {
		return fmt.Errorf("the backup comes before the restart without a deny window to shorten (steps %v)", ids)
	}
	if b > pos["validate"] {
		return fmt.Errorf("the backup comes after the validation (steps %v)", ids)
	}
	return nil
}

// TestTheMigrationKeepsTheUpstreamOrderOnGeneratedMeshes plans the migration of many generated
// namespaces and checks the order the upstream procedure requires on every plan ("if you do not
// follow this order, traffic may be handled by neither"). Swapping any two of its steps in the
// planner fails it.
func TestTheMigrationKeepsTheUpstreamOrderOnGeneratedMeshes(t *testing.T) {
	base, err := os.ReadFile("testdata/base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(18, 19)) // fixed seed: the same meshes every run
	planned, blocked, windows, waypoints := 0, 0, 0, 0
	for i := 0; i < 120; i++ {
		g := generateMesh(r)
		s := observeYAMLText(t, string(base)+"\n---\n"+g.yaml)
		if g.applyAll {
			rep, err := migrate.Readiness(s, "gen", migrate.ReadinessOptions{Waypoint: g.opts.Waypoint})
			if err != nil {
				t.Fatal(err)
			}
			for _, pr := range rep.Proposals {
				g.opts.Apply = append(g.opts.Apply, pr.For)
			}
		}
		p, err := migrate.MigrateNamespace(s, "gen", g.opts)
		if errors.Is(err, migrate.ErrBlocked) {
			blocked++
			continue
		}
		if err != nil {
			t.Fatalf("mesh %d (%s): %v", i, g.desc, err)
		}
		planned++
		if _, ok := p.Step("migrate/gen/deny-window"); ok {
			windows++
		}
		if _, ok := p.Step("migrate/gen/waypoint/programmed"); ok {
			waypoints++
		}
		if err := checkOrder(p, "gen"); err != nil {
			t.Errorf("mesh %d (%s): %v", i, g.desc, err)
		}
	}
	t.Logf("%d plans checked (%d with a waypoint, %d with a deny window), %d blocked", planned, waypoints, windows, blocked)
	if planned < 60 || windows == 0 || waypoints == 0 || blocked == 0 {
		t.Errorf("the generator covers too little: %d planned, %d with a waypoint, %d with a deny window, %d blocked", planned, waypoints, windows, blocked)
	}
}

// TestTheOrderPropertyCatchesEverySwap: the property must fail when any two steps of a real plan
// change places (the deny window's approval and the backup, which share a place, excepted).
func TestTheOrderPropertyCatchesEverySwap(t *testing.T) {
	p, err := migrate.MigrateNamespace(migrationSnapshot(t), "checkout", checkoutOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := checkOrder(p, "checkout"); err != nil {
		t.Fatalf("the checkout plan itself: %v", err)
	}
	for i := 1; i < len(p.Steps); i++ {
		for j := i + 1; j < len(p.Steps); j++ {
			a, _ := orderRank(strings.TrimPrefix(p.Steps[i].ID, "migrate/checkout/"))
			b, _ := orderRank(strings.TrimPrefix(p.Steps[j].ID, "migrate/checkout/"))
			if a == b || a == "backup" && b == "deny-window" || a == "deny-window" && b == "backup" {
				continue // two deletions, or two proposals, may come in either order
			}
			swapped := *p
			swapped.Steps = append([]plan.Step(nil), p.Steps...)
			swapped.Steps[i], swapped.Steps[j] = swapped.Steps[j], swapped.Steps[i]
			rechain(swapped.Steps)
			if checkOrder(&swapped, "checkout") == nil {
				t.Errorf("swapping %s and %s goes unnoticed", p.Steps[i].ID, p.Steps[j].ID)
			}
		}
	}
}

// rechain makes each step depend on the one before, as the planner does.
func rechain(steps []plan.Step) {
	for i := range steps {
		steps[i].DependsOn = nil
		if i > 0 {
			steps[i].DependsOn = []string{steps[i-1].ID}
		}
	}
}

func observeYAMLText(t *testing.T, doc string) *mesh.Snapshot {
	t.Helper()
	s, err := observe.YAML(context.Background(), "generated", strings.NewReader(doc), observe.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
