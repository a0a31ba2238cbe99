package nodename

import "strings"

// Placeholders in templates.
const (
	// Node stands for the node in templates.
	Node = "{node}"
	// Wave stands for a wave's number in the steps that close a wave.
	Wave = "{n}"
)

// IDPattern is the ID with the node's segment replaced by placeholder.
func IDPattern(id, node, placeholder string) string {
	segs := strings.Split(id, "/")
	for i := len(segs) - 1; i >= 0; i-- {
		if segs[i] == node {
			segs[i] = placeholder
			break
		}
	}
	return strings.Join(segs, "/")
}

// Numbered is an ID with its segments that are numbers replaced by Wave.
func Numbered(id string) string {
	segs := strings.Split(id, "/")
	for i, s := range segs {
		if s != "" && strings.Trim(s, "0123456789") == "" {
			segs[i] = Wave
		}
	}
	return strings.Join(segs, "/")
}

// IsNameByte reports whether c can be part of a node name.
func IsNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

// Replace replaces the occurrences of name in s that stand alone (not inside a longer name; a
// full stop after it ends a sentence) with with.
func Replace(s, name, with string) string {
	if name == "" || !strings.Contains(s, name) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], name)
		if j < 0 {
			b.WriteString(s[i:])
			break
		}
		j += i
		end := j + len(name)
		alone := (j == 0 || !IsNameByte(s[j-1])) &&
			(end == len(s) || !IsNameByte(s[end]) || s[end] == '.' && (end+1 == len(s) || !IsNameByte(s[end+1])))
		b.WriteString(s[i:j])
		if alone {
			b.WriteString(with)
		} else {
			b.WriteString(name)
		}
		i = end
	}
	return b.String()
}

// ReplaceInJSON replaces name with with in every string and key of a decoded JSON value, where it
// stands alone.
func ReplaceInJSON(v any, name, with string) any {
	return MapStrings(v, func(s string) string { return Replace(s, name, with) })
}

// MapStrings returns a decoded JSON value with f applied to every string and key.
func MapStrings(v any, f func(string) string) any {
	switch x := v.(type) {
	case string:
		return f(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = MapStrings(e, f)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[f(k)] = MapStrings(e, f)
		}
		return out
	}
	return v
}
