package execute

import (
	"context"
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// waivers are the codes the plan was made with plus Options.Waive, known codes only.
func (cp *checkPass) waivers() []plan.Code {
	var out []plan.Code
	for _, c := range strings.Split(cp.r.p.Metadata.Options["waive"], ",") {
		if c = strings.TrimSpace(c); c != "" && plan.KnownCode(plan.Code(c)) {
			out = append(out, plan.Code(c))
		}
	}
	for _, c := range cp.e.opts.Waive {
		if plan.KnownCode(c) {
			out = append(out, c)
		}
	}
	return out
}

func checkFindingsClear(cp *checkPass, ctx context.Context, _ plan.Check, a plan.FindingsClearArgs) (bool, string, error) {
	var target mesh.Version
	if t := a.Target + a.Version; t != "" {
		if a.Target != "" {
			t = a.Target
		} else {
			t = a.Version
		}
		v, err := mesh.ParseVersion(t)
		if err != nil {
			return false, "", fmt.Errorf("params target/version %q: %w; fix the plan", t, err)
		}
		target = v
	}
	s, err := cp.snapshot(ctx)
	if err != nil {
		return false, "", err
	}
	if a.Component == "control-plane" {
		var have []string
		for _, r := range s.Revisions {
			if r.Ready() && !r.Version.IsZero() && (target.IsZero() || r.Version.MinorIndex() >= target.MinorIndex()) {
				return true, "", nil
			}
			have = append(have, fmt.Sprintf("%s (%s, ready=%v)", r.Name, r.Version, r.Ready()))
		}
		return false, fmt.Sprintf("no ready control plane at %s or newer; revisions: %s", target.MinorString(), orNone(have)), nil
	}
	gate := cp.e.opts.Gates.Compatibility
	if gate == nil {
		return false, "", fmt.Errorf("%w: the check needs the compatibility gate; pass execute.Options.Gates (ambient.Gates())", ErrNoGate)
	}
	findings, err := gate(s, plan.GateQuery{Target: target, Strategy: a.Strategy, Today: cp.e.clock.Now(), Waive: cp.waivers()})
	if err != nil {
		return false, "", err
	}
	stop := plan.Stopping(findings)
	if len(stop) == 0 {
		return true, "", nil
	}
	var what []string
	for _, f := range stop {
		what = append(what, f.String())
	}
	return false, fmt.Sprintf("%s stop it: %s", plural(len(stop), "finding", "findings"), plan.ListSome(what, 6)), nil
}
