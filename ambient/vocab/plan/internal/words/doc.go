// Package words holds the few ways of writing numbers and lists that the plan, its runbook and its
// time estimate share.
package words
