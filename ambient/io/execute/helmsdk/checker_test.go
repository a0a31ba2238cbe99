package helmsdk

import "github.com/ambientkit/ambientkit/ambient/io/execute"

// The executor confirms a plan's charts through CheckChart before a fresh run changes anything.
var _ execute.ChartChecker = (*Client)(nil)
