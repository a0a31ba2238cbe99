package plan

import "strings"

// severities is the set of severities a code's findings are raised with, in rank order.
type severities []Severity

// CodeSeverities returns the severities findings of c are raised with (blocking, waivable, info, in
// that order), nil for an unknown code. A finding the plan resolves is lowered to info afterwards,
// whatever its code.
func CodeSeverities(c Code) []Severity {
	s, ok := codeSeverities[c]
	if !ok {
		return nil
	}
	return append([]Severity(nil), s...)
}

// CodeWaivable reports whether a waiver can accept findings of c: some of them are raised waivable.
// A waiver of a code that never is (always blocking, or only info) accepts nothing.
func CodeWaivable(c Code) bool { return codeRaisedAs(c, Waivable) }

// CodeRaisedAs reports whether findings of c are raised with severity s; info always holds for a known
// code, since the plan lowers the findings it resolves to info.
func CodeRaisedAs(c Code, s Severity) bool {
	if s == Info && KnownCode(c) {
		return true
	}
	return codeRaisedAs(c, s)
}

func codeRaisedAs(c Code, s Severity) bool {
	for _, x := range codeSeverities[c] {
		if x == s {
			return true
		}
	}
	return false
}

// CodeSeverityLabel says in words how findings of c are raised, as --list-codes prints it:
// "blocking", "waivable", "info", or two of them joined by " or ".
func CodeSeverityLabel(c Code) string {
	var parts []string
	for _, s := range codeSeverities[c] {
		parts = append(parts, string(s))
	}
	return strings.Join(parts, " or ")
}
