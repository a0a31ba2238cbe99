//go:build e2e

// Command observer is the measured "our side" of the scale bench (hack/scale-bench.sh): it observes a
// cluster through the public API only (observe.Live with a controller-runtime client, protobuf for
// built-in kinds), computes the compatibility verdict and plans the upgrade, and writes what it did as
// JSON: wall time per phase, peak RSS of this process (VmHWM), API requests (Observation.Requests
// and a count by a wrapping RoundTripper), and what was checked.
//
//	observer -kubeconfig K -target 1.31.4 -out ours.json
//
// Waivable findings are waived (-waive-waivable, default on) so the plan is runnable; blocking
// findings stop the plan as they would for a user, and are reported.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ambientkit/ambientkit/ambient"
	"github.com/ambientkit/ambientkit/ambient/io/observe"
	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
	"github.com/ambientkit/ambientkit/ambient/vocab/plan"
)

// UserAgent of the observer's requests (the audit log shows it).
const UserAgent = "ambientkit-scalebench-observer"

// Result is written to -out.
type Result struct {
	Target       string             `json:"target"`
	WallSeconds  float64            `json:"wallSeconds"`
	Phases       map[string]float64 `json:"phaseSeconds"`
	VmHWMKiB     int64              `json:"vmHWMKiB"`
	GoHeapSysMiB float64            `json:"goHeapSysMiB"`
	Requests     int                `json:"observationRequests"`
	HTTPRequests int                `json:"httpRequests"`
	HTTPByRoute  map[string]int     `json:"httpByRoute"`
	// Lists are the first pages of the LISTs made, in order: what the bench's floor (e2e/scalebench/floor) repeats.
	Lists         []List         `json:"lists"`
	Skipped       []string       `json:"skipped,omitempty"`
	Snapshot      SnapshotCounts `json:"snapshot"`
	Compatibility CompatCounts   `json:"compatibility"`
	Plan          PlanCounts     `json:"plan"`
	Error         string         `json:"error,omitempty"`
}

// SnapshotCounts say how much the observation saw.
type SnapshotCounts struct {
	Nodes, Namespaces, Workloads, Revisions, Tags, Policies, HelmReleases int
	Pods, SidecarPods, AmbientPods                                        int
}

// CompatCounts summarise ComputeCompatibility.
type CompatCounts struct {
	Components, Nodes int
	Findings          int
	BySeverity        map[string]int
	Codes             map[string]int
	OK                bool
}

// PlanCounts summarise PlanUpgrade.
type PlanCounts struct {
	Steps, Checks, Findings int
	Codes                   map[string]int
	Waived                  []string
	Runnable                bool
	// BlockedSteps are steps the plan holds back (Step.Blocked), e.g. removing a revision still in use.
	BlockedSteps int
	FirstBlocked string `json:",omitempty"`
	Blocked      string `json:",omitempty"`
}

// List is the first page of one LIST request.
type List struct {
	Path   string `json:"path"`
	Query  string `json:"query"`
	Accept string `json:"accept"`
}

type counter struct {
	mu      sync.Mutex
	n       int
	byRoute map[string]int
	lists   []List
	next    http.RoundTripper
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	route := r.Method + " " + r.URL.Path
	q := r.URL.Query()
	c.mu.Lock()
	c.n++
	c.byRoute[route]++
	if r.Method == http.MethodGet && (q.Has("limit") || q.Get("watch") == "true" || q.Get("watch") == "1") && !q.Has("continue") {
		c.lists = append(c.lists, List{Path: r.URL.Path, Query: r.URL.RawQuery, Accept: r.Header.Get("Accept")})
	}
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	target := flag.String("target", "1.31.4", "Istio version to plan the upgrade to")
	out := flag.String("out", "", "write the result as JSON here (default stdout)")
	waive := flag.String("waive", "", "extra comma-separated waivable codes to accept")
	waiveAll := flag.Bool("waive-waivable", true, "waive every waivable finding the compatibility check reports, so the plan is runnable")
	var lv levers
	flag.Int64Var(&lv.pageSize, "page-size", 0, "observe.Options.PageSize (0: the default)")
	flag.IntVar(&lv.parallel, "parallel", 0, "observe.Options.Parallel (0: the default)")
	flag.BoolVar(&lv.watchList, "watch-list", false, "observe.Options.WatchList, with a client.NewWithWatch client")
	flag.StringVar(&lv.contentType, "content-type", "protobuf", "what built-in kinds are read as: protobuf or json")
	flag.BoolVar(&lv.compression, "compression", true, "accept gzip-compressed responses (rest.Config.DisableCompression false)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run here")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "observer:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	res, err := run(*kubeconfig, *target, *waive, *waiveAll, lv)
	if err != nil {
		res.Error = err.Error()
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	if *out == "" {
		fmt.Println(string(b))
	} else if werr := os.WriteFile(*out, b, 0o644); werr != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "observer:", werr)
		os.Exit(1)
	}
	if err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "observer:", err)
		os.Exit(1)
	}
}

// levers are the observation choices the bench compares.
type levers struct {
	pageSize    int64
	parallel    int
	watchList   bool
	contentType string
	compression bool
}

func run(kubeconfig, targetS, waive string, waiveAll bool, lv levers) (*Result, error) {
	t0 := time.Now()
	res := &Result{Target: targetS, Phases: map[string]float64{}}
	phase := func(name string, since time.Time) { res.Phases[name] = time.Since(since).Seconds() }
	defer func() {
		res.WallSeconds = time.Since(t0).Seconds()
		res.VmHWMKiB = vmHWM()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		res.GoHeapSysMiB = float64(ms.HeapSys) / (1 << 20)
	}()
	target, err := mesh.ParseVersion(targetS)
	if err != nil {
		return res, err
	}
	rc, cnt, err := restConfig(kubeconfig, lv)
	if err != nil {
		return res, err
	}
	defer func() {
		cnt.mu.Lock()
		res.HTTPRequests = cnt.n
		res.HTTPByRoute = cnt.byRoute
		res.Lists = cnt.lists
		cnt.mu.Unlock()
	}()

	t := time.Now()
	c, err := client.NewWithWatch(rc, client.Options{Scheme: observe.Scheme()})
	if err != nil {
		return res, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return res, err
	}
	phase("client", t)

	t = time.Now()
	ctx := context.Background()
	snap, err := observe.Live(ctx, c, observe.Options{ServerVersion: dc, PageSize: lv.pageSize, Parallel: lv.parallel, WatchList: lv.watchList})
	phase("observe", t)
	if err != nil {
		return res, err
	}
	res.Requests = snap.Observation.Requests
	res.Skipped = snap.Observation.Skipped
	res.Snapshot = countSnapshot(snap)

	today := time.Now().UTC()
	t = time.Now()
	compat, err := ambient.CompatibilityReport(snap, ambient.CompatibilityOptions{Target: target, Today: today})
	phase("compatibility", t)
	if err != nil {
		return res, err
	}
	waived := countCompatibility(res, compat, waive, waiveAll)
	opts := ambient.UpgradeOptions{Target: target, Today: today}
	for c := range waived {
		opts.Waive = append(opts.Waive, c)
		res.Plan.Waived = append(res.Plan.Waived, string(c))
	}
	sort.Strings(res.Plan.Waived)

	t = time.Now()
	p, err := ambient.PlanUpgrade(snap, opts)
	phase("plan", t)
	// The plan may raise waivable findings of its own (drains, connection resets): accept them too
	// and plan again, as a user would after reviewing the first plan, so the plan is runnable.
	if waiveAll && err == nil && p != nil && !p.Runnable() {
		more := false
		for _, f := range p.Findings {
			if f.Severity == plan.Waivable && !f.Waived && !waived[f.Code] {
				waived[f.Code] = true
				opts.Waive = append(opts.Waive, f.Code)
				res.Plan.Waived = append(res.Plan.Waived, string(f.Code))
				more = true
			}
		}
		if more {
			sort.Strings(res.Plan.Waived)
			t = time.Now()
			p, err = ambient.PlanUpgrade(snap, opts)
			phase("plan-again-with-waivers", t)
		}
	}
	countPlan(res, p)
	if errors.Is(err, ambient.ErrBlocked) {
		res.Plan.Blocked = err.Error()
		return res, nil
	}
	return res, err
}

// countCompatibility records the report's verdicts and findings in the result, and returns the
// codes the run waives: those of -waive, and every waivable one with -waive-all.
func countCompatibility(res *Result, compat *ambient.Compatibility, waive string, waiveAll bool) map[plan.Code]bool {
	res.Compatibility = CompatCounts{Components: len(compat.Components), Nodes: len(compat.Nodes), Findings: len(compat.Findings),
		BySeverity: map[string]int{}, Codes: map[string]int{}, OK: compat.OK()}
	waived := map[plan.Code]bool{}
	for _, f := range compat.Findings {
		res.Compatibility.BySeverity[string(f.Severity)]++
		res.Compatibility.Codes[string(f.Code)]++
		if waiveAll && f.Severity == plan.Waivable {
			waived[f.Code] = true
		}
	}
	for _, w := range strings.Split(waive, ",") {
		if w = strings.TrimSpace(w); w != "" {
			waived[plan.Code(w)] = true
		}
	}
	return waived
}

// countPlan records the plan's steps, checks, findings and held steps in the result.
func countPlan(res *Result, p *plan.Plan) {
	if p == nil {
		return
	}
	res.Plan.Steps = len(p.Steps)
	res.Plan.Findings = len(p.Findings)
	res.Plan.Codes = map[string]int{}
	for _, f := range p.Findings {
		res.Plan.Codes[string(f.Code)]++
	}
	for _, st := range p.Steps {
		res.Plan.Checks += len(st.Preconditions) + len(st.Postconditions)
		if st.Blocked != "" {
			if res.Plan.BlockedSteps == 0 {
				res.Plan.FirstBlocked = st.ID + ": " + st.Blocked
				if len(res.Plan.FirstBlocked) > 160 {
					res.Plan.FirstBlocked = res.Plan.FirstBlocked[:160] + " …"
				}
			}
			res.Plan.BlockedSteps++
		}
	}
	res.Plan.Runnable = p.Runnable()
}

// restConfig is the client configuration of one measured run: content type and compression as
// the levers say, istioctl's QPS, the bench's user agent, and a transport that counts requests.
func restConfig(kubeconfig string, lv levers) (*rest.Config, *counter, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	// Protobuf for built-in kinds (controller-runtime sends JSON for unstructured custom resources
	// whatever this says). QPS as istioctl sets it, so neither side is throttled differently.
	switch lv.contentType {
	case "protobuf":
		rc.ContentType = "application/vnd.kubernetes.protobuf"
		rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	case "json":
		rc.ContentType = "application/json"
		rc.AcceptContentTypes = "application/json"
	default:
		return nil, nil, fmt.Errorf("-content-type %q: want protobuf or json", lv.contentType)
	}
	rc.QPS, rc.Burst = 50, 100
	rc.DisableCompression = !lv.compression
	rc.UserAgent = UserAgent
	cnt := &counter{byRoute: map[string]int{}}
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { cnt.next = rt; return cnt }
	return rc, cnt, nil
}

func countSnapshot(s *mesh.Snapshot) SnapshotCounts {
	c := SnapshotCounts{Nodes: len(s.Nodes), Namespaces: len(s.Namespaces), Workloads: len(s.Workloads),
		Revisions: len(s.Revisions), Tags: len(s.Tags), Policies: len(s.Policies), HelmReleases: len(s.HelmReleases)}
	for _, n := range s.Namespaces {
		c.Pods += n.Pods.Total
		for _, v := range n.Pods.Sidecar {
			c.SidecarPods += v
		}
		c.AmbientPods += n.Pods.AmbientEnabled
	}
	return c
}

// vmHWM is this process's peak resident set size in KiB (/proc/self/status), -1 when unreadable.
func vmHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			var v int64
			if _, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:")), "%d", &v); err == nil {
				return v
			}
		}
	}
	return -1
}
