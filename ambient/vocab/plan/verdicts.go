package plan

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// Outcome is what an operation does to one configuration object.
type Outcome string

// Outcomes of a Verdict.
const (
	// Unaffected: the operation leaves the object's effect as it is; Reason says why.
	Unaffected Outcome = "unaffected"
	// Changes: the operation changes what the object does, or the object changes what the
	// operation may do; the findings of Codes say how.
	Changes Outcome = "changes"
	// NotAssessed: the planner does not model the object's kind (or the fields it uses), so it
	// cannot tell; Reason names what to check by hand. Kinds the code has never heard of (a CRD of
	// mesh.ConfigGroups newer than it) are always NotAssessed.
	NotAssessed Outcome = "not-assessed"
)

// Verdict is an operation's word on one configuration object in its scope. A plan holds one per
// object, so that nothing the operation touches goes unmentioned.
type Verdict struct {
	// Object is the object; a Verdict with an empty Name stands for every object of its kind, whose
	// objects the input did not hold although the cluster's CRDs serve the kind
	// (mesh.Observation.Unread).
	Object  mesh.ConfigObject `json:"object"`
	Outcome Outcome           `json:"outcome"`
	// Reason says why, in one sentence.
	Reason string `json:"reason"`
	// Codes are the codes of the plan's findings about the object, sorted.
	Codes []Code `json:"codes,omitempty"`
}

// Accounting is what Finalize needs to give every configuration object in an operation's scope
// its verdict.
type Accounting struct {
	// Objects are every configuration object of the snapshot (mesh.Snapshot.ConfigObjects).
	Objects []mesh.ConfigObject
	// InScope reports whether the operation concerns an object. An object a finding of the plan
	// names (as Object or Related) is in scope whatever InScope says.
	InScope func(mesh.ConfigObject) bool
	// Judge gives the planner's outcome and reason for an object. A finding about the object (its
	// Object, not a Related one) that is not Info makes an Unaffected outcome Changes, with the
	// first such finding's message as the reason; a NotAssessed one stays so. Every finding naming
	// the object, Related ones too, lists its code.
	Judge func(mesh.ConfigObject) (Outcome, string)
	// Unread are the resources of mesh.ConfigGroups the input lacked (mesh.Observation.Unread):
	// each gets a NotAssessed verdict for its whole kind.
	Unread []string
}

// account fills p.Verdicts from a, after the findings are normalised.
func account(p *Plan, a *Accounting) {
	if a == nil {
		return
	}
	codes := map[mesh.ObjectRef][]Code{}
	changing := map[mesh.ObjectRef]string{} // the message of the first finding that is not Info
	for _, f := range p.Findings {
		for _, r := range append([]mesh.ObjectRef{f.Object}, f.Related...) {
			codes[r] = append(codes[r], f.Code)
		}
		if _, ok := changing[f.Object]; !ok && f.Severity != Info {
			changing[f.Object] = f.Message
		}
	}
	seen := map[mesh.ConfigObject]bool{}
	var out []Verdict
	for _, o := range a.Objects {
		named := len(codes[o.Ref()]) > 0
		if seen[o] || !(named || a.InScope == nil || a.InScope(o)) {
			continue
		}
		seen[o] = true
		outcome, reason := NotAssessed, "the planner does not model "+o.Kind+"."+o.Group
		if a.Judge != nil {
			outcome, reason = a.Judge(o)
		}
		if msg, ok := changing[o.Ref()]; ok && outcome == Unaffected {
			outcome, reason = Changes, msg
		}
		out = append(out, Verdict{Object: o, Outcome: outcome, Reason: reason, Codes: sortedCodes(codes[o.Ref()])})
	}
	for _, res := range a.Unread {
		plural, group, _ := strings.Cut(res, ".")
		out = append(out, Verdict{Object: mesh.ConfigObject{Group: group, Kind: KindOfResource(plural, group)}, Outcome: NotAssessed,
			Reason: fmt.Sprintf("the input holds no %s although the cluster's CRDs serve them, so what the operation does to them is not assessed: add them to the dump (`kubectl get %s -A -o yaml > %s.yaml`) and plan again", res, res, res)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Object.Less(out[j].Object) })
	p.Verdicts = out
}

// KindOfResource names the kind of a resource of mesh.ConfigGroups ("envoyfilters" →
// "EnvoyFilter"); a resource the code does not know keeps its plural.
func KindOfResource(plural, group string) string {
	for _, k := range mesh.ConfigKinds {
		if k.Plural == plural && k.Group == group {
			return k.Kind
		}
	}
	return plural
}

// validateVerdicts: one verdict per object, each with a known outcome and a reason.
func validateVerdicts(vs []Verdict) error {
	seen := map[mesh.ConfigObject]bool{}
	for _, v := range vs {
		switch v.Outcome {
		case Unaffected, Changes, NotAssessed:
		default:
			return fmt.Errorf("verdict on %s: unknown outcome %q (unaffected, changes or not-assessed)", v.Object, v.Outcome)
		}
		if v.Reason == "" || v.Object.Kind == "" {
			return fmt.Errorf("verdict on %s: the object's kind and the reason must be set", v.Object)
		}
		if seen[v.Object] {
			return fmt.Errorf("two verdicts on %s", v.Object)
		}
		seen[v.Object] = true
	}
	return nil
}

// sortedCodes returns the codes sorted, each once; nil for none.
func sortedCodes(cs []Code) []Code {
	if len(cs) == 0 {
		return nil
	}
	out := append([]Code(nil), cs...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	n := 1
	for _, c := range out[1:] {
		if c != out[n-1] {
			out[n] = c
			n++
		}
	}
	return out[:n]
}
