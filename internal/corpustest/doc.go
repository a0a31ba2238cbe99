// Package corpustest loads, for tests, the mesh states the planners are tried on: the embedded demo
// mesh and every dump of the broken corpus (testdata/broken/*/dump), each observed as
// observe.Dir reads a kubectl dump.
package corpustest
