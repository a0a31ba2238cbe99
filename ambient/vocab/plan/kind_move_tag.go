package plan

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

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
	// ChartVersion is the istiod chart version whose revision-tags templates render the objects.
	// Empty in plans made before it was recorded.
	ChartVersion string `json:"chartVersion,omitempty"`
	// Chart is that istiod chart from the caller's chart source (a folder, a mirror or an OCI
	// registry), which the runbook's helm template command renders the tag from; zero when the
	// planner was given no chart source, and the runbook applies Objects with kubectl instead.
	Chart ChartRef `json:"chart,omitzero"`
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
	commands:    func(s *Step) []string { return moveTagCommands(s.MoveTag) },
	node:        noNode,
	undoByHand:  noUndoByHand,
	checkByHand: noCheckByHand,
}

// moveTagCommands render the tag as the istiod chart's revision-tags templates do, from the
// caller's chart source, and apply it; without a chart source they apply the plan's rendered
// objects, as the executor does. istioctl's equivalent is given as a comment: the commands need
// kubectl and helm only.
func moveTagCommands(m *TagMove) []string {
	istioctl := fmt.Sprintf("# with istioctl: istioctl tag set %s --revision %s --overwrite -n %s", m.Tag, m.To, m.Namespace)
	if m.Chart.Name == "" {
		docs := make([]string, 0, len(m.Objects))
		for _, o := range m.Objects {
			y, _ := yaml.Marshal(o)
			docs = append(docs, strings.TrimSpace(string(y)))
		}
		return []string{istioctl, "kubectl apply --server-side --field-manager=ambientkit --force-conflicts -f - <<'EOF'\n" + strings.Join(docs, "\n---\n") + "\nEOF"}
	}
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
	return []string{istioctl, fmt.Sprintf("helm template istiod %s %s --set revisionTags=\"{%s}\" --set revision=%s -n %s | kubectl apply --server-side --field-manager=ambientkit --force-conflicts -f -",
		helmChartArgs(m.Chart), templates, m.Tag, m.To, m.Namespace)}
}
