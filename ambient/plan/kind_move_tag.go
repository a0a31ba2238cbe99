package plan

import "fmt"

// TagMove points a revision tag at another revision: it re-renders the tag's webhook configuration
// (and, from Istio 1.28, its Service).
type TagMove struct {
	Tag  string `json:"tag"`
	From string `json:"from,omitempty"`
	To   string `json:"to"`
	// Namespace istiod runs in.
	Namespace string `json:"namespace"`
	// Objects are the rendered objects the move applies (webhook configuration, Service).
	Objects []map[string]any `json:"objects,omitempty"`
	// ChartVersion is the istiod chart version whose revision-tags templates render the objects; the
	// runbook's helm template command names it. Empty in plans made before it was recorded.
	ChartVersion string `json:"chartVersion,omitempty"`
}

// KindMoveTag is the kind of steps whose action is Step.MoveTag.
const KindMoveTag Kind = "MoveTag"

var moveTagKind = kindSpec{
	kind:    KindMoveTag,
	payload: payloadOf(func(s *Step) *TagMove { return s.MoveTag }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		if s.MoveTag.Tag == "" || s.MoveTag.To == "" {
			bad("%s: moveTag needs tag and to", where)
		}
		for _, o := range s.MoveTag.Objects {
			validateObject(o, where, bad)
		}
	},
	commands: func(s *Step) []string {
		m := s.MoveTag
		out := []string{fmt.Sprintf("istioctl tag set %s --revision %s --overwrite -n %s", m.Tag, m.To, m.Namespace)}
		// The revision-tags-svc.yaml template exists only from Istio 1.28 (istio/istio@1.28.0:
		// manifests/charts/istio-control/istio-discovery/templates/revision-tags-svc.yaml), the same
		// release from which the rendered objects include the tag Service.
		templates := "-s templates/revision-tags-mwc.yaml"
		for _, o := range m.Objects {
			if k, _ := o["kind"].(string); k == "Service" {
				templates += " -s templates/revision-tags-svc.yaml"
				break
			}
		}
		version := ""
		if m.ChartVersion != "" {
			version = " --version " + m.ChartVersion
		}
		out = append(out, fmt.Sprintf("# or, with Helm: helm template istiod istio/istiod%s %s --set revisionTags=\"{%s}\" --set revision=%s -n %s | kubectl apply -f -",
			version, templates, m.Tag, m.To, m.Namespace))
		return out
	},
	node: noNode,
	summary: func(s *Step) (summaryRow, bool) {
		m := s.MoveTag
		return summaryRow{key: "tag " + m.Tag, name: "tag " + m.Tag, current: orUnknown(m.From), target: m.To, how: "move"}, true
	},
	timing: noTiming,
	// action_move_tag.go: each rendered object is server-side applied, as ApplyObject does.
	permissions: func(s *Step, dry bool, n need) {
		for _, o := range s.MoveTag.Objects {
			n.apply(o, dry)
		}
	},
	release: noRelease,
}
