package plan

import (
	"fmt"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

// targets returns Object when it is set, else Objects.
func targets(object mesh.ObjectRef, objects []mesh.ObjectRef) []mesh.ObjectRef {
	if object.Kind != "" || object.Name != "" {
		return []mesh.ObjectRef{object}
	}
	return objects
}

// nodeObject is the name of the object a label or annotation patch works on when it is a Node, else
// "" (a patch of several objects works on no one node).
func nodeObject(object mesh.ObjectRef) string {
	if object.Kind == "Node" {
		return object.Name
	}
	return ""
}

// validateMetadataPatch checks a label or annotation patch: one Object or a list of Objects of one
// kind in one namespace, something to set or remove, no key both set and removed.
func validateMetadataPatch(what, apiVersion string, object mesh.ObjectRef, objects []mesh.ObjectRef, set map[string]string, remove []string, where string, bad func(string, ...any)) {
	one := object.Kind != "" || object.Name != ""
	switch {
	case apiVersion == "":
		bad("%s: %s needs apiVersion", where, what)
	case one && len(objects) > 0:
		bad("%s: %s names an object and a list of objects; use one", where, what)
	case !one && len(objects) == 0:
		bad("%s: %s names no object", where, what)
	}
	for i, o := range targets(object, objects) {
		if o.Kind == "" || o.Name == "" {
			bad("%s: %s object %d needs kind and name", where, what, i)
		}
		if o.Kind != objects0(object, objects).Kind || o.Namespace != objects0(object, objects).Namespace {
			bad("%s: %s objects must share one kind and namespace (%s differs)", where, what, o)
		}
	}
	if len(set) == 0 && len(remove) == 0 {
		bad("%s: %s sets and removes nothing", where, what)
	}
	for _, k := range remove {
		if _, both := set[k]; both {
			bad("%s: %s both sets and removes %q", where, what, k)
		}
	}
}

func objects0(object mesh.ObjectRef, objects []mesh.ObjectRef) mesh.ObjectRef {
	if t := targets(object, objects); len(t) > 0 {
		return t[0]
	}
	return mesh.ObjectRef{}
}

// metadataCommand is the kubectl label or annotate command of a patch: one object as kind/name,
// several as kind name name ...
func metadataCommand(verb string, object mesh.ObjectRef, objects []mesh.ObjectRef, set map[string]string, remove []string) string {
	var args []string
	for _, k := range sortedKeys(set) {
		args = append(args, k+"="+set[k])
	}
	for _, k := range remove {
		args = append(args, k+"-")
	}
	t := targets(object, objects)
	target := ""
	if len(t) == 1 {
		target = kubectlTarget(t[0])
	} else if len(t) > 1 {
		names := make([]string, 0, len(t))
		for _, o := range t {
			names = append(names, o.Name)
		}
		target = strings.ToLower(t[0].Kind) + " " + strings.Join(names, " ")
		if t[0].Namespace != "" {
			target += " -n " + t[0].Namespace
		}
	}
	return fmt.Sprintf("kubectl %s --overwrite %s %s", verb, target, strings.Join(args, " "))
}
