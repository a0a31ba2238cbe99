package plan

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Versions of the plan document. The Go types of this package are the in-memory model; the document
// a plan is written as is versioned apart from them:
//
//   - ambientkit.io/v1alpha3 (APIVersion) is what EncodeYAML and EncodeJSON write, the shape the
//     schema file testdata/schema/plan.v1alpha3.txt pins and the JSON Schema plan.schema.json
//     describes: a status, findings and steps always present ([] when empty), typed options;
//   - ambientkit.io/v1alpha2 (APIVersionV1Alpha2), written up to December 2026, is still read: its
//     options were all strings, which Options reads as well, and it had no status;
//   - ambientkit.io/v1alpha1 (APIVersionV1Alpha1) is still read: Decode converts it (a step's
//     postconditions were called "verification"; there were no waves).
//
// The rule: within a version, fields are only added, optional, with a zero value that means what
// the field's absence meant before. Renaming or removing a field, or changing what a value means,
// makes a new version: its conversion from the version before joins conversions, and a document
// written by the older version is kept as a test that it still decodes to the same plan.
const (
	APIVersion         = "ambientkit.io/v1alpha3"
	APIVersionV1Alpha2 = "ambientkit.io/v1alpha2"
	APIVersionV1Alpha1 = "ambientkit.io/v1alpha1"
)

// conversion turns a document of one version (as JSON, forEachNode entries expanded) into the next.
type conversion struct {
	next    string
	convert func(doc map[string]json.RawMessage) error
}

// conversions lead from each older version to the next, up to APIVersion.
var conversions = map[string]conversion{
	APIVersionV1Alpha1: {next: APIVersionV1Alpha2, convert: v1alpha1To2},
	APIVersionV1Alpha2: {next: APIVersion, convert: v1alpha2To3},
}

// Versions returns every version Decode reads, oldest first; the last is APIVersion.
func Versions() []string {
	out := []string{APIVersion}
	for v := range conversions {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// convert brings a decoded document to APIVersion. A document of another group or an unknown
// version is left for Validate to refuse with what it expected.
func convert(j []byte) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(j, &doc); err != nil {
		return j, nil // the strict decoder says what is wrong
	}
	var v string
	if err := json.Unmarshal(doc["apiVersion"], &v); err != nil || v == APIVersion {
		return j, nil
	}
	if _, ok := conversions[v]; !ok {
		if strings.HasPrefix(v, "ambientkit.io/") {
			return nil, fmt.Errorf("apiVersion %q is not one this build reads (%s); upgrade ambientkit or re-plan", v, strings.Join(Versions(), ", "))
		}
		return j, nil
	}
	for v != APIVersion {
		c := conversions[v]
		if err := c.convert(doc); err != nil {
			return nil, fmt.Errorf("convert %s to %s: %v", v, c.next, err)
		}
		v = c.next
		b, _ := json.Marshal(v)
		doc["apiVersion"] = b
	}
	return json.Marshal(doc)
}

// v1alpha2To3 changes nothing in the document: v1alpha3 writes options typed and adds the
// status, and Options and Plan read v1alpha2's string options and missing status as they were.
func v1alpha2To3(map[string]json.RawMessage) error { return nil }

// v1alpha1To2 renames each step's and rollback's "verification" to "postconditions".
func v1alpha1To2(doc map[string]json.RawMessage) error {
	var steps []map[string]json.RawMessage
	if doc["steps"] == nil {
		return nil
	}
	if err := json.Unmarshal(doc["steps"], &steps); err != nil {
		return fmt.Errorf("steps: %v", err)
	}
	for i, st := range steps {
		if err := renameKey(st, "verification", "postconditions"); err != nil {
			return fmt.Errorf("steps[%d]: %v", i, err)
		}
		if rb := st["rollback"]; rb != nil {
			var r map[string]json.RawMessage
			if err := json.Unmarshal(rb, &r); err != nil {
				return fmt.Errorf("steps[%d].rollback: %v", i, err)
			}
			if err := renameKey(r, "verification", "postconditions"); err != nil {
				return fmt.Errorf("steps[%d].rollback: %v", i, err)
			}
			b, err := json.Marshal(r)
			if err != nil {
				return err
			}
			st["rollback"] = b
		}
	}
	b, err := json.Marshal(steps)
	if err != nil {
		return err
	}
	doc["steps"] = b
	return nil
}

func renameKey(m map[string]json.RawMessage, from, to string) error {
	v, ok := m[from]
	if !ok {
		return nil
	}
	if _, dup := m[to]; dup {
		return fmt.Errorf("has both %q and %q", from, to)
	}
	delete(m, from)
	m[to] = v
	return nil
}
