package execute

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// condition is one status condition of an object, as read loosely from unstructured content.
type condition struct {
	status, reason, message string
	observedGeneration      int64
}

// conditionOf returns the status condition of the given type (status.conditions), or false.
func conditionOf(u *unstructured.Unstructured, typ string) (condition, bool) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, ci := range conds {
		m, _ := ci.(map[string]any)
		if m["type"] != typ {
			continue
		}
		c := condition{}
		c.status, _ = m["status"].(string)
		c.reason, _ = m["reason"].(string)
		c.message, _ = m["message"].(string)
		switch g := m["observedGeneration"].(type) {
		case int64:
			c.observedGeneration = g
		case float64:
			c.observedGeneration = int64(g)
		}
		return c, true
	}
	return condition{}, false
}

// conditionHolds says whether the condition of type typ is True for the object's current
// generation, and why not.
func conditionHolds(u *unstructured.Unstructured, what, typ string) (bool, string) {
	c, ok := conditionOf(u, typ)
	switch {
	case !ok:
		return false, fmt.Sprintf("%s has no %s condition yet", what, typ)
	case c.status != "True":
		why := fmt.Sprintf("%s is %s=%s", what, typ, c.status)
		if c.reason != "" {
			why += " (" + c.reason + ")"
		}
		if c.message != "" {
			why += ": " + c.message
		}
		return false, why
	case c.observedGeneration > 0 && c.observedGeneration < u.GetGeneration():
		return false, fmt.Sprintf("%s: the %s condition describes generation %d; the object is at %d", what, typ, c.observedGeneration, u.GetGeneration())
	}
	return true, ""
}
