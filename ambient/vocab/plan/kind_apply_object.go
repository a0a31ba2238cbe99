package plan

import (
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// ApplyObject server-side-applies a Kubernetes object given as data.
type ApplyObject struct {
	Object map[string]any `json:"object"`
}

// Ref names the object to apply.
func (a ApplyObject) Ref() mesh.ObjectRef {
	return objectRef(a.Object)
}

func objectRef(o map[string]any) mesh.ObjectRef {
	meta, _ := o["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	kind, _ := o["kind"].(string)
	return mesh.ObjectRef{Kind: kind, Namespace: ns, Name: name}
}

func validateObject(o map[string]any, where string, bad func(string, ...any)) {
	api, _ := o["apiVersion"].(string)
	ref := objectRef(o)
	if api == "" || ref.Kind == "" || ref.Name == "" {
		bad("%s: the object to apply needs apiVersion, kind and metadata.name", where)
	}
}

func applyCommand(o map[string]any) string {
	y, _ := yaml.Marshal(o)
	return "kubectl apply --server-side --field-manager=ambientkit --force-conflicts -f - <<'EOF'\n" + strings.TrimSpace(string(y)) + "\nEOF"
}

// KindApplyObject is the kind of steps whose action is Step.ApplyObject.
const KindApplyObject Kind = "ApplyObject"

var applyObjectKind = kindSpec{
	kind:    KindApplyObject,
	payload: payloadOf(func(s *Step) *ApplyObject { return s.ApplyObject }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		validateObject(s.ApplyObject.Object, where, bad)
	},
	commands:    func(s *Step) []string { return []string{applyCommand(s.ApplyObject.Object)} },
	node:        noNode,
	undoByHand:  noUndoByHand,
	checkByHand: noCheckByHand,
}
