// Package runbook holds the e2e suite that runs the printed Markdown runbook by hand: it extracts
// every shell command and printed check of a small plan's runbook, in order, runs them with kubectl
// and the helm CLI against a kwok cluster, and compares the end state with the executor's run of the
// same plan on a twin cluster. Build tag e2e; see e2e/README.md.
package runbook
