package plan

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// FinalizeOptions are what a planner passes to Finalize.
type FinalizeOptions struct {
	// Waive lists the waivable finding codes the caller accepts. An unknown code is an error;
	// waiving a blocking or info finding changes nothing.
	Waive []Code
	// Subject, when set, is named in the error of a blocked plan ("namespace payments").
	Subject string
	// Accounting, when set, gives every configuration object in the operation's scope its verdict
	// (Plan.Verdicts). Every operation that changes the mesh sets it.
	Accounting *Accounting
}

// CheckWaivers returns an error wrapping ErrInvalidOptions that names every code of waive that is
// not a finding code, with the nearest known code, so planners refuse bad waivers before they plan.
func CheckWaivers(waive []Code) error {
	var errs []error
	for _, c := range waive {
		if KnownCode(c) {
			continue
		}
		msg := fmt.Sprintf("cannot waive unknown finding code %q", c)
		if near := NearestCode(string(c)); near != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", near)
		}
		errs = append(errs, errors.New(msg+"; see plan.AllCodes()"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	return nil
}

// Finalize is the one finishing step of every planner (ambient.ComputeCompatibility,
// ambient.PlanUpgrade, ztunnel.BlueGreenZtunnel, tags.MoveTag, migrate.MigrateNamespace), so that
// every plan keeps one contract. In order, it
//
//  1. normalises the findings: equal findings are kept once, each finding's Related objects are
//     kept once, and the Helm values of every step are turned into the JSON types a
//     decoded plan holds (a plan compares equal to itself after a round trip);
//  2. waives: a waivable finding whose code opts.Waive names is marked Waived, and the waivers are
//     recorded in metadata.options.waive (the executor's run-time gates accept the same codes);
//  3. sorts the findings by severity, code and object, and gives every configuration object in
//     scope its verdict (opts.Accounting);
//  4. blocks: when a blocking finding stands, the steps are dropped and the error wraps ErrBlocked,
//     naming the codes; the plan is returned with its findings so callers can show why;
//  5. validates the plan (Validate): a planner that built an invalid plan is a bug, reported as an
//     error wrapping ErrInvalidPlan, with no plan;
//  6. requires the fingerprint of the snapshot the plan was made from (metadata.fingerprint).
//
// Unwaived waivable findings do not stop a plan: it is returned whole, and Runnable reports false
// until they are waived or fixed. Bad waivers give an error wrapping ErrInvalidOptions and no plan.
func Finalize(p *Plan, opts FinalizeOptions) (*Plan, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: the planner returned no plan", ErrInvalidPlan)
	}
	if err := CheckWaivers(opts.Waive); err != nil {
		return nil, err
	}
	if p.Metadata.Fingerprint == "" {
		return nil, fmt.Errorf("%w: plan %q has no snapshot fingerprint; a planner must stamp the fingerprint of the snapshot it read (mesh.Snapshot.Fingerprint)", ErrInvalidPlan, p.Metadata.Name)
	}
	p.Findings = normalizeFindings(p.Findings)
	if err := normalizeStepValues(p.Steps); err != nil {
		return nil, fmt.Errorf("plan %q: %w", p.Metadata.Name, err)
	}
	waived := map[Code]bool{}
	for _, c := range opts.Waive {
		waived[c] = true
	}
	for i := range p.Findings {
		if p.Findings[i].Severity == Waivable && waived[p.Findings[i].Code] {
			p.Findings[i].Waived = true
		}
	}
	if len(waived) > 0 {
		if p.Metadata.Options == nil {
			p.Metadata.Options = map[string]string{}
		}
		p.Metadata.Options["waive"] = joinCodes(waived)
	}
	SortFindings(p.Findings)
	account(p, opts.Accounting)
	var blocking []Code
	for _, f := range p.Findings {
		if f.Severity == Blocking {
			blocking = append(blocking, f.Code)
		}
	}
	if len(blocking) > 0 {
		p.Steps = nil
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("internal error, the planner built an invalid plan: %w", err)
	}
	if len(blocking) > 0 {
		what := strings.Join(uniqueCodes(blocking), ", ")
		if opts.Subject != "" {
			what = opts.Subject + ": " + what
		}
		return p, fmt.Errorf("%w: %s", ErrBlocked, what)
	}
	return p, nil
}

// normalizeFindings keeps equal findings once (the same code, severity, object, component, message
// and details: chained hops and composed planners find the same things again) and keeps each
// finding's Related objects once.
func normalizeFindings(fs []Finding) []Finding {
	seen := map[string]bool{}
	out := fs[:0]
	for _, f := range fs {
		f.Related = uniqueRefs(f.Related)
		k := findingKey(f)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, f)
	}
	return out
}

func findingKey(f Finding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%s|%s|%s|", f.Code, f.Severity, f.Object, f.Component, f.Message)
	for _, k := range sortedKeys(f.Details) {
		fmt.Fprintf(&b, "%s=%s;", k, f.Details[k])
	}
	return b.String()
}

// normalizeStepValues turns the Helm values of every step and rollback into JSON data.
func normalizeStepValues(steps []Step) error {
	for i := range steps {
		for _, s := range []*Step{&steps[i], steps[i].Rollback} {
			if s == nil {
				continue
			}
			for _, h := range []*HelmRelease{s.HelmInstall, s.HelmUpgrade} {
				if h == nil || h.Values == nil {
					continue
				}
				v, err := NormalizeValues(h.Values)
				if err != nil {
					return fmt.Errorf("step %q, release %s/%s: %w", s.ID, h.Namespace, h.Release, err)
				}
				h.Values = v
			}
		}
	}
	return nil
}

func joinCodes(set map[Code]bool) string {
	var out []string
	for c := range set {
		out = append(out, string(c))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func uniqueCodes(cs []Code) []string {
	var out []string
	seen := map[Code]bool{}
	for _, c := range cs {
		if !seen[c] {
			seen[c] = true
			out = append(out, string(c))
		}
	}
	sort.Strings(out)
	return out
}

// uniqueRefs drops repeated objects, keeping the first of each in its place (planners order Related
// by meaning: a tag's namespaces before its workloads); nil stays nil.
func uniqueRefs(refs []mesh.ObjectRef) []mesh.ObjectRef {
	if len(refs) < 2 {
		return refs
	}
	seen := make(map[mesh.ObjectRef]bool, len(refs))
	out := refs[:0:0]
	for _, r := range refs {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}
