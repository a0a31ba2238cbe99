package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/ambientkit/ambientkit/ambient/vocab/plan/internal/nodename"
)

// forEachNode is how EncodeYAML writes a run of nodes that go through the same steps: the steps once,
// with {node} where the node's name stands, the nodes in order, and for a step of one node that
// differs from the template a JSON merge patch (RFC 7386) of the template, keyed by the step's ID.
// Decode expands it back into the steps, node after node, exactly as they were: a run is folded only
// when expanding it gives its steps back. In YAML:
//
//	steps:
//	- forEachNode:
//	    nodes: [pool-a-1, pool-a-2]
//	    steps:
//	    - id: ztunnel/node/{node}/cordon
//	      cordon: {node: "{node}", pool: a}
//	      ...
//	    patch:
//	      ztunnel/node/pool-a-2/cordon: {cordon: {pool: b}}
type forEachNode struct {
	Nodes []string                   `json:"nodes"`
	Steps []json.RawMessage          `json:"steps"`
	Patch map[string]json.RawMessage `json:"patch,omitempty"`
}

// forEachKey is the key of a folded entry in the step list.
const forEachKey = "forEachNode"

// foldSteps replaces, in the YAML sequence of a plan's steps, each run of at least two blocks of one
// shape with a forEachNode entry.
func foldSteps(seq *yaml.Node, steps []Step) error {
	if seq == nil || len(seq.Content) != len(steps) {
		return nil
	}
	var runs [][]NodeBlock
	for _, b := range NodeBlocks(steps) {
		if n := len(runs); n > 0 {
			last := runs[n-1][len(runs[n-1])-1]
			if last.Shape == b.Shape && last.End == b.Start {
				runs[n-1] = append(runs[n-1], b)
				continue
			}
		}
		runs = append(runs, []NodeBlock{b})
	}
	folded := map[int]*yaml.Node{} // first step index of a run → its entry
	skip := map[int]bool{}
	for _, run := range runs {
		if len(run) < 2 {
			continue
		}
		entry, ok, err := foldRun(seq, steps, run)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		folded[run[0].Start] = entry
		for i := run[0].Start; i < run[len(run)-1].End; i++ {
			skip[i] = true
		}
	}
	var content []*yaml.Node
	for i, n := range seq.Content {
		if e, ok := folded[i]; ok {
			content = append(content, e)
		}
		if !skip[i] {
			content = append(content, n)
		}
	}
	seq.Content = content
	return nil
}

// foldRun builds the forEachNode entry of a run; ok is false when the run cannot be folded exactly.
func foldRun(seq *yaml.Node, steps []Step, run []NodeBlock) (*yaml.Node, bool, error) {
	size := run[0].End - run[0].Start
	// generic[b][k] is step k of block b with its node replaced by the placeholder.
	generic := make([][]any, len(run))
	for bi, b := range run {
		for k := 0; k < size; k++ {
			v, err := canonical(steps[b.Start+k])
			if err != nil {
				return nil, false, err
			}
			if strings.Contains(mustJSON(v), nodename.Node) || strings.Contains(b.Node, nodename.Node) {
				return nil, false, nil
			}
			generic[bi] = append(generic[bi], nodename.ReplaceInJSON(v, b.Node, nodename.Node))
		}
	}
	var templates []*yaml.Node
	var tmplValues []any
	for k := 0; k < size; k++ {
		best, count := 0, map[string]int{}
		for bi := range run {
			key := mustJSON(generic[bi][k])
			count[key]++
			if count[key] > count[mustJSON(generic[best][k])] {
				best = bi
			}
		}
		tmplValues = append(tmplValues, generic[best][k])
		templates = append(templates, replaceInYAML(seq.Content[run[best].Start+k], run[best].Node, nodename.Node))
	}
	fe := forEachNode{Patch: map[string]json.RawMessage{}}
	for bi, b := range run {
		fe.Nodes = append(fe.Nodes, b.Node)
		for k := 0; k < size; k++ {
			if reflect.DeepEqual(generic[bi][k], tmplValues[k]) {
				continue
			}
			patch, ok := mergeDiff(tmplValues[k], generic[bi][k])
			if !ok {
				return nil, false, nil
			}
			fe.Patch[steps[b.Start+k].ID] = json.RawMessage(mustJSON(patch))
		}
	}
	for _, t := range tmplValues {
		fe.Steps = append(fe.Steps, json.RawMessage(mustJSON(t)))
	}
	// Fold only what unfolds to the very steps.
	got, err := fe.expand()
	if err != nil {
		return nil, false, nil
	}
	for i, raw := range got {
		want, err := canonical(steps[run[0].Start+i])
		if err != nil {
			return nil, false, err
		}
		var v any
		if err := decodeNumbers(raw, &v); err != nil || !reflect.DeepEqual(v, want) {
			return nil, false, nil
		}
	}
	// The entry, with the templates in field order.
	patch, err := yamlTree([]byte(mustJSON(fe.Patch)))
	if err != nil {
		return nil, false, err
	}
	nodes, err := yamlTree([]byte(mustJSON(fe.Nodes)))
	if err != nil {
		return nil, false, err
	}
	body := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
		yamlString("nodes"), nodes,
		yamlString("steps"), {Kind: yaml.SequenceNode, Tag: "!!seq", Content: templates},
	}}
	if len(fe.Patch) > 0 {
		body.Content = append(body.Content, yamlString("patch"), patch)
	}
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{yamlString(forEachKey), body}}, true, nil
}

// expand returns the steps of the entry as JSON, node after node.
func (fe forEachNode) expand() ([]json.RawMessage, error) {
	if len(fe.Nodes) == 0 || len(fe.Steps) == 0 {
		return nil, fmt.Errorf("%s needs nodes and steps", forEachKey)
	}
	templates := make([]any, len(fe.Steps))
	for i, raw := range fe.Steps {
		if err := decodeNumbers(raw, &templates[i]); err != nil {
			return nil, fmt.Errorf("%s step %d: %v", forEachKey, i, err)
		}
		m, ok := templates[i].(map[string]any)
		id, _ := m["id"].(string)
		if !ok || !strings.Contains(id, nodename.Node) {
			return nil, fmt.Errorf("%s step %d: its id must hold %s", forEachKey, i, nodename.Node)
		}
	}
	used := map[string]bool{}
	var out []json.RawMessage
	for _, node := range fe.Nodes {
		if node == "" || strings.Contains(node, nodename.Node) {
			return nil, fmt.Errorf("%s: node name %q", forEachKey, node)
		}
		for _, t := range templates {
			id := strings.ReplaceAll(t.(map[string]any)["id"].(string), nodename.Node, node)
			v := t
			if raw, ok := fe.Patch[id]; ok {
				var patch any
				if err := decodeNumbers(raw, &patch); err != nil {
					return nil, fmt.Errorf("%s patch of %s: %v", forEachKey, id, err)
				}
				v = mergePatch(t, patch)
				used[id] = true
			}
			out = append(out, json.RawMessage(mustJSON(replaceAllInJSON(v, nodename.Node, node))))
		}
	}
	for id := range fe.Patch {
		if !used[id] {
			return nil, fmt.Errorf("%s: patch names step %q, which the entry does not make", forEachKey, id)
		}
	}
	return out, nil
}

// unfoldSteps expands the forEachNode entries of a decoded JSON plan into its steps.
func unfoldSteps(j []byte) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(j, &doc); err != nil {
		return j, nil // the strict decoder says what is wrong
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(doc["steps"], &entries); err != nil {
		return j, nil
	}
	folded := false
	var out []json.RawMessage
	for i, e := range entries {
		var probe map[string]json.RawMessage
		if json.Unmarshal(e, &probe) != nil || probe[forEachKey] == nil {
			out = append(out, e)
			continue
		}
		if len(probe) != 1 {
			return nil, fmt.Errorf("steps[%d]: a %s entry holds nothing else", i, forEachKey)
		}
		folded = true
		dec := json.NewDecoder(bytes.NewReader(probe[forEachKey]))
		dec.DisallowUnknownFields()
		var fe forEachNode
		if err := dec.Decode(&fe); err != nil {
			return nil, fmt.Errorf("steps[%d] %s: %v", i, forEachKey, err)
		}
		steps, err := fe.expand()
		if err != nil {
			return nil, fmt.Errorf("steps[%d]: %v", i, err)
		}
		out = append(out, steps...)
	}
	if !folded {
		return j, nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	doc["steps"] = b
	return json.Marshal(doc)
}

// canonical is a step as decoded JSON (numbers kept as written).
func canonical(s Step) (any, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode step %s: %w", s.ID, err)
	}
	var v any
	if err := decodeNumbers(b, &v); err != nil {
		return nil, fmt.Errorf("encode step %s: %w", s.ID, err)
	}
	return v, nil
}

func decodeNumbers(b []byte, v *any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("plan: JSON value does not encode: %v", err))
	}
	return string(b)
}

// replaceAllInJSON replaces every occurrence of old in the strings and keys of a decoded JSON value.
func replaceAllInJSON(v any, old, with string) any {
	return nodename.MapStrings(v, func(s string) string { return strings.ReplaceAll(s, old, with) })
}

// replaceInYAML returns a copy of a YAML tree with name replaced where it stands alone in a scalar.
func replaceInYAML(n *yaml.Node, name, with string) *yaml.Node {
	c := *n
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		c = *yamlString(nodename.Replace(n.Value, name, with))
	}
	c.Content = nil
	for _, e := range n.Content {
		c.Content = append(c.Content, replaceInYAML(e, name, with))
	}
	if n.Kind != yaml.ScalarNode {
		c.Style = 0
		flowIfShort(&c)
	}
	return &c
}

// mergeDiff returns the JSON merge patch that turns from into to; ok is false when none can (a
// member to set to null, which a merge patch reads as "remove").
func mergeDiff(from, to any) (any, bool) {
	fm, fok := from.(map[string]any)
	tm, tok := to.(map[string]any)
	if !fok || !tok {
		return to, !nullMember(to)
	}
	out := map[string]any{}
	for k, tv := range tm {
		fv, had := fm[k]
		switch {
		case had && reflect.DeepEqual(fv, tv):
			continue
		case tv == nil:
			return nil, false
		case had:
			d, ok := mergeDiff(fv, tv)
			if !ok {
				return nil, false
			}
			out[k] = d
		case nullMember(tv):
			return nil, false
		default:
			out[k] = tv
		}
	}
	for k := range fm {
		if _, kept := tm[k]; !kept {
			out[k] = nil
		}
	}
	return out, true
}

// nullMember reports whether an object, or an object in it, has a member that is null.
func nullMember(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, e := range m {
		if e == nil || nullMember(e) {
			return true
		}
	}
	return false
}

// mergePatch applies a JSON merge patch (RFC 7386).
func mergePatch(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	out := map[string]any{}
	if ok {
		for k, v := range tm {
			out[k] = v
		}
	}
	for k, v := range pm {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = mergePatch(out[k], v)
	}
	return out
}
