package executetest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"sync"

	"github.com/ambientkit/ambientkit/ambient/io/execute"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// FakeHelm is an in-memory execute.HelmClient. Releases keep their history, so Rollback works as
// Helm's does (a new revision copying an old one).
type FakeHelm struct {
	mu      sync.Mutex
	history map[string][]execute.Release // by "namespace/name", oldest first; the last is current
	// OnChange, when set, is called after every change that is not a dry run, with the operation
	// ("install", "upgrade", "rollback", "uninstall") and the release as it now is (the removed one for
	// uninstall). Tests use it to play what the chart would do to the cluster.
	OnChange func(ctx context.Context, op string, rel execute.Release) error
	// Fault, when set, is asked before every call ("get", "install", "upgrade", "rollback",
	// "uninstall") with the release's "namespace/name". A non-nil error fails the call; after=true
	// fails it after the change was made (a lost response).
	Fault func(op, release string) (err error, after bool)
	// Charts, when set, are the versions the chart sources hold, by chart name: CheckChart finds only
	// these, whatever the source (tests of the executor's chart check). Nil means every chart version
	// asked for exists.
	Charts map[string][]string
	calls  map[string]int
	checks map[string]int
}

// NewFakeHelm returns a fake holding the given releases as their current revisions.
func NewFakeHelm(releases ...execute.Release) *FakeHelm {
	f := &FakeHelm{history: map[string][]execute.Release{}, calls: map[string]int{}}
	for _, r := range releases {
		r.Values = copyValues(r.Values)
		if r.Status == "" {
			r.Status = "deployed"
		}
		if r.Revision == 0 {
			r.Revision = 1
		}
		f.history[key(r.Namespace, r.Name)] = append(f.history[key(r.Namespace, r.Name)], r)
	}
	return f
}

func key(ns, name string) string { return ns + "/" + name }

func copyValues(v map[string]any) map[string]any {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// Calls returns how many changes were made, by "op namespace/name" (dry runs and failures excluded).
func (f *FakeHelm) Calls() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.calls)
}

// ResetCalls forgets the counted changes.
func (f *FakeHelm) ResetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = map[string]int{}
}

// Releases returns the current revision of every release, sorted by namespace/name.
func (f *FakeHelm) Releases() []execute.Release {
	f.mu.Lock()
	defer f.mu.Unlock()
	var keys []string
	for k, h := range f.history {
		if len(h) > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []execute.Release
	for _, k := range keys {
		h := f.history[k]
		r := h[len(h)-1]
		r.Values = copyValues(r.Values)
		out = append(out, r)
	}
	return out
}

func (f *FakeHelm) fault(op, rel string) (error, bool) {
	if f.Fault == nil {
		return nil, false
	}
	return f.Fault(op, rel)
}

// change runs a mutation with fault injection and the OnChange hook.
func (f *FakeHelm) change(ctx context.Context, op, ns, name string, dry bool, mutate func() (execute.Release, error)) (*execute.Release, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k := key(ns, name)
	var late error
	if !dry {
		err, after := f.fault(op, k)
		if err != nil && !after {
			return nil, err
		}
		late = err
	}
	f.mu.Lock()
	saved := f.history[k]
	rel, err := mutate()
	if err != nil || dry {
		f.history[k] = saved
		f.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return &rel, nil
	}
	f.calls[op+" "+k]++
	f.mu.Unlock()
	if f.OnChange != nil {
		if err := f.OnChange(ctx, op, rel); err != nil {
			return nil, err
		}
	}
	if late != nil {
		return nil, late
	}
	return &rel, nil
}

// Get returns the current revision.
func (f *FakeHelm) Get(ctx context.Context, name, ns string) (*execute.Release, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err, _ := f.fault("get", key(ns, name)); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.history[key(ns, name)]
	if len(h) == 0 {
		return nil, fmt.Errorf("%w: %s", execute.ErrReleaseNotFound, key(ns, name))
	}
	r := h[len(h)-1]
	r.Values = copyValues(r.Values)
	return &r, nil
}

// Install creates revision 1.
func (f *FakeHelm) Install(ctx context.Context, req execute.HelmRequest) (*execute.Release, error) {
	return f.change(ctx, "install", req.Namespace, req.Release, req.DryRun, func() (execute.Release, error) {
		k := key(req.Namespace, req.Release)
		if len(f.history[k]) > 0 {
			return execute.Release{}, fmt.Errorf("cannot re-use a name that is still in use: %s", k)
		}
		r := execute.Release{Name: req.Release, Namespace: req.Namespace, Chart: req.Chart.Name, ChartVersion: req.Chart.Version,
			AppVersion: req.Chart.Version, Revision: 1, Status: "deployed", Values: copyValues(req.Values)}
		f.history[k] = []execute.Release{r}
		return r, nil
	})
}

// Upgrade adds a revision with the new chart version and values.
func (f *FakeHelm) Upgrade(ctx context.Context, req execute.HelmRequest) (*execute.Release, error) {
	return f.change(ctx, "upgrade", req.Namespace, req.Release, req.DryRun, func() (execute.Release, error) {
		k := key(req.Namespace, req.Release)
		h := f.history[k]
		if len(h) == 0 {
			return execute.Release{}, fmt.Errorf("%q has no deployed releases", k)
		}
		cur := h[len(h)-1]
		vals := copyValues(req.Values)
		if req.ReuseValues {
			vals = copyValues(cur.Values)
			if vals == nil {
				vals = map[string]any{}
			}
			merge(vals, copyValues(req.Values))
		}
		r := execute.Release{Name: req.Release, Namespace: req.Namespace, Chart: req.Chart.Name, ChartVersion: req.Chart.Version,
			AppVersion: req.Chart.Version, Revision: cur.Revision + 1, Status: "deployed", Values: vals}
		f.history[k] = append(append([]execute.Release(nil), h...), r)
		return r, nil
	})
}

func merge(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// Rollback adds a revision copying an earlier one.
func (f *FakeHelm) Rollback(ctx context.Context, req execute.HelmRollbackRequest) error {
	_, err := f.change(ctx, "rollback", req.Namespace, req.Release, req.DryRun, func() (execute.Release, error) {
		k := key(req.Namespace, req.Release)
		h := f.history[k]
		if len(h) == 0 {
			return execute.Release{}, fmt.Errorf("%q has no deployed releases", k)
		}
		for _, old := range h {
			if old.Revision == req.Revision {
				r := old
				r.Values = copyValues(old.Values)
				r.Revision, r.Status = h[len(h)-1].Revision+1, "deployed"
				f.history[k] = append(append([]execute.Release(nil), h...), r)
				return r, nil
			}
		}
		return execute.Release{}, fmt.Errorf("release %s has no revision %d", k, req.Revision)
	})
	return err
}

// Uninstall removes the release and its history.
func (f *FakeHelm) Uninstall(ctx context.Context, req execute.HelmUninstallRequest) error {
	_, err := f.change(ctx, "uninstall", req.Namespace, req.Release, req.DryRun, func() (execute.Release, error) {
		k := key(req.Namespace, req.Release)
		h := f.history[k]
		if len(h) == 0 {
			return execute.Release{}, fmt.Errorf("%w: %s", execute.ErrReleaseNotFound, k)
		}
		r := h[len(h)-1]
		delete(f.history, k)
		return r, nil
	})
	return err
}

// CheckChart finds the chart version in Charts (see there), as execute.ChartChecker asks; it returns
// the newest version of the chart's entry when the version is missing. A Path reference counts as its
// own version.
func (f *FakeHelm) CheckChart(ctx context.Context, ref plan.ChartRef) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	src := ref.Repository + ref.OCI + ref.Path
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.checks == nil {
		f.checks = map[string]int{}
	}
	f.checks[ref.Name+" "+ref.Version+" "+src]++
	if f.Charts == nil || ref.Path != "" {
		return ref.Version, nil
	}
	var newest mesh.Version
	for _, v := range f.Charts[ref.Name] {
		if v == ref.Version {
			return v, nil
		}
		if pv, err := mesh.ParseVersion(v); err == nil && newest.Less(pv) {
			newest = pv
		}
	}
	have := ""
	if !newest.IsZero() {
		have = newest.String()
	}
	return have, fmt.Errorf("chart %s %s is not in %s (it has %v)", ref.Name, ref.Version, src, f.Charts[ref.Name])
}

// ChartChecks returns how many times CheckChart was asked, by "chart version source".
func (f *FakeHelm) ChartChecks() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.checks)
}

var (
	_ execute.HelmClient   = (*FakeHelm)(nil)
	_ execute.ChartChecker = (*FakeHelm)(nil)
)
