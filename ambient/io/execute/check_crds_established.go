package execute

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// crdsEstablished: every CRD of the group (or a subgroup: *.istio.io) is Established (one LIST).
func (e *engine) crdsEstablished(ctx context.Context, group string) (bool, string, error) {
	if group == "" {
		group = "istio.io"
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("apiextensions.k8s.io/v1")
	list.SetKind("CustomResourceDefinitionList")
	if err := e.list(ctx, "CustomResourceDefinitions", list); err != nil {
		return false, "", err
	}
	n := 0
	var not []string
	for _, crd := range list.Items {
		g, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		if g != group && !strings.HasSuffix(g, "."+group) {
			continue
		}
		n++
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		ok := false
		for _, ci := range conds {
			cm, _ := ci.(map[string]any)
			if cm["type"] == "Established" && cm["status"] == "True" {
				ok = true
			}
		}
		if !ok {
			not = append(not, crd.GetName())
		}
	}
	switch {
	case n == 0:
		return false, fmt.Sprintf("no CustomResourceDefinition of group %s or *.%s exists", group, group), nil
	case len(not) > 0:
		sort.Strings(not)
		return false, fmt.Sprintf("%d of %d CRDs of *.%s are not Established: %s", len(not), n, group, plan.ListSome(not, 6)), nil
	}
	return true, "", nil
}

func checkCRDsEstablished(cp *checkPass, ctx context.Context, _ plan.Check, a plan.CRDsEstablishedArgs) (bool, string, error) {
	return cp.e.crdsEstablished(ctx, a.Group)
}
