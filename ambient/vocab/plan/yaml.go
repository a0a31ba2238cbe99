package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// flowWidth is the longest collection of scalars EncodeYAML writes on one line ({node: a, ...}).
const flowWidth = 100

// encodeYAMLTree writes a JSON document as YAML: keys in the order the JSON has them (the order of
// the Go fields, so a step starts with its id), collections of scalars that fit in flowWidth on one
// line, strings that YAML 1.1 would read as something else quoted.
func encodeYAMLTree(n *yaml.Node) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	if err := enc.Encode(n); err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	return buf.Bytes(), nil
}

// yamlTree reads JSON into a YAML node tree that keeps the order of object keys.
func yamlTree(j []byte) (*yaml.Node, error) {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	n, err := yamlValue(dec)
	if err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	return n, nil
}

func yamlValue(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		if t == '{' {
			n = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		}
		for dec.More() {
			if n.Kind == yaml.MappingNode {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, yamlString(k.(string)))
			}
			v, err := yamlValue(dec)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		flowIfShort(n)
		return n, nil
	case string:
		return yamlString(t), nil
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(t.String(), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(t)}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// yaml11Special matches plain scalars YAML 1.1 (which sigs.k8s.io/yaml reads) takes for booleans or
// sexagesimal numbers, though YAML 1.2 takes them for strings.
var yaml11Special = regexp.MustCompile(`^(y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF|[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?)$`)

func yamlString(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	switch {
	case strings.Contains(s, "\n"):
		n.Style = yaml.LiteralStyle
	case yaml11Special.MatchString(s):
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// flowIfShort puts a collection on one line when it holds only scalars and collections already on
// one line, and fits in flowWidth.
func flowIfShort(n *yaml.Node) {
	w := 2
	for _, c := range n.Content {
		cw, ok := flowLen(c)
		if !ok {
			return
		}
		w += cw + 2
	}
	if w <= flowWidth {
		n.Style = yaml.FlowStyle
	}
}

// flowLen is about how wide a child is on one line; ok is false when it cannot be written so.
func flowLen(n *yaml.Node) (int, bool) {
	switch {
	case n.Kind == yaml.ScalarNode:
		return len(n.Value) + 2, n.Style != yaml.LiteralStyle
	case n.Style == yaml.FlowStyle:
		w := 2
		for _, c := range n.Content {
			cw, _ := flowLen(c)
			w += cw + 2
		}
		return w, true
	}
	return 0, false
}
