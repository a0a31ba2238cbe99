package plan

import (
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/mesh"
)

// PatchLabels sets and removes labels on one object.
type PatchLabels struct {
	APIVersion string            `json:"apiVersion"`
	Object     mesh.ObjectRef    `json:"object"`
	Set        map[string]string `json:"set,omitempty"`
	Remove     []string          `json:"remove,omitempty"`
}

var patchLabelsKind = kindSpec{
	kind:    KindPatchLabels,
	payload: payloadOf(func(s *Step) *PatchLabels { return s.PatchLabels }),
	validate: func(s *Step, where string, bad func(string, ...any)) {
		p := s.PatchLabels
		if p.APIVersion == "" || p.Object.Kind == "" || p.Object.Name == "" {
			bad("%s: patchLabels needs apiVersion, object.kind and object.name", where)
		}
		if len(p.Set) == 0 && len(p.Remove) == 0 {
			bad("%s: patchLabels sets and removes nothing", where)
		}
		for _, k := range p.Remove {
			if _, both := p.Set[k]; both {
				bad("%s: patchLabels both sets and removes label %q", where, k)
			}
		}
	},
	commands: func(s *Step) []string {
		var args []string
		for _, k := range sortedKeys(s.PatchLabels.Set) {
			args = append(args, k+"="+s.PatchLabels.Set[k])
		}
		for _, k := range s.PatchLabels.Remove {
			args = append(args, k+"-")
		}
		return []string{fmt.Sprintf("kubectl label --overwrite %s %s", kubectlTarget(s.PatchLabels.Object), strings.Join(args, " "))}
	},
}
