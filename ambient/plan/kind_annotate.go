package plan

import (
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/mesh"
)

// Annotate sets and removes annotations on one object (karpenter.sh/do-not-disrupt on a node, ...).
type Annotate struct {
	APIVersion string            `json:"apiVersion"`
	Object     mesh.ObjectRef    `json:"object"`
	Set        map[string]string `json:"set,omitempty"`
	Remove     []string          `json:"remove,omitempty"`
}

var annotateKind = kindSpec{
	kind:    KindAnnotate,
	payload: payloadOf(func(s *Step) *Annotate { return s.Annotate }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		a := s.Annotate
		if a.APIVersion == "" || a.Object.Kind == "" || a.Object.Name == "" {
			bad("%s: annotate needs apiVersion, object.kind and object.name", where)
		}
		if len(a.Set) == 0 && len(a.Remove) == 0 {
			bad("%s: annotate sets and removes nothing", where)
		}
	},
	commands: func(s *Step) []string {
		var args []string
		for _, k := range sortedKeys(s.Annotate.Set) {
			args = append(args, k+"="+s.Annotate.Set[k])
		}
		for _, k := range s.Annotate.Remove {
			args = append(args, k+"-")
		}
		return []string{fmt.Sprintf("kubectl annotate --overwrite %s %s", kubectlTarget(s.Annotate.Object), strings.Join(args, " "))}
	},
}
