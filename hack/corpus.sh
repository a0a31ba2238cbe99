#!/usr/bin/env bash
# Regenerates the corpus of broken mesh states, testdata/broken (one command; see e2e/corpus):
#
#   bash hack/corpus.sh                      # every state
#   bash hack/corpus.sh -only c03-tag-names-missing-revision,z07-gitops-all-charts-at-once
#
# It builds nothing but the generator: the kwok control plane comes from hack/e2e-bins.sh (cached),
# the Istio charts from the istio.io/istio Go module, as for the e2e suites. The cluster is one kwok
# cluster bound to 127.0.0.1, deleted at the end. It holds a lock file ($E2E_LOCK, default $TMPDIR/ambientkit-e2e.lock) while the cluster runs,
# so it never shares the machine's two cores with another e2e run. The unit test that runs every
# state through the examples is TestBrokenCorpus (examples/corpus_test.go); it needs no cluster.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export E2E_BIN_DIR=${E2E_BIN_DIR:-$(bash hack/e2e-bins.sh | tail -n 1)}
gen=${TMPDIR:-/tmp}/ambientkit-corpus-gen
lock=${E2E_LOCK:-${TMPDIR:-/tmp}/ambientkit-e2e.lock}
t0=$SECONDS
go build -tags e2e -o "$gen" ./e2e/corpus
flock "$lock" "$gen" -out testdata/broken "$@"
echo "corpus.sh: done in $((SECONDS - t0))s; $(du -sh testdata/broken | cut -f1) in testdata/broken" >&2
