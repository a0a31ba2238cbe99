// Package releases holds the Istio release data the planners reason with: which versions exist, when
// each minor was released and reaches end of life, which Kubernetes versions it supports and which
// Gateway API bundle it needs.
//
// # Versions come from where the charts come from
//
// A plan installs charts from a chart repository (or a mirror of one), so the versions it may target
// are best read from that repository's index.yaml: FromHelmIndex or LoadHelmIndexFile build a Data
// whose targetable versions are exactly the chart versions every chart of an install (base, istiod,
// cni, ztunnel, and gateway when asked) serves there. Check then refuses any other version, naming
// the newest patch of its minor the index does have, and Latest, Next and Newest (which chained
// upgrades use to pick their hops) only return versions the repository has. `helm repo update`
// caches the index it fetched as $HELM_CACHE_HOME/repository/<name>-index.yaml (by default
// ~/.cache/helm/repository/ on Linux; `helm env HELM_REPOSITORY_CACHE` prints the directory).
//
// # The embedded data
//
// Dates, end of life, Kubernetes ranges and Gateway API versions come from an embedded YAML file
// (releases.yaml, documented field by field), which is also the offline default for versions. Each
// field of a minor states where its value came from and whether it is an estimate, and callers can
// ask both (Minor.Source, Minor.IsEstimated, Minor.Known), so a planner can say when an estimate
// decided something. A caller who knows of newer releases loads their own file with Load or
// LoadFile and passes it in the planners' options; no recompilation is needed. Files of the older
// flat shape (APIVersionV1Alpha1) still load. Data.Origin says which of these a Data came from.
//
// The package is pure: it parses what it is given and reads files only when asked to (LoadFile,
// LoadHelmIndexFile); it never fetches anything.
package releases
