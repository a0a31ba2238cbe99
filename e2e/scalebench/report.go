//go:build e2e

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// observerResult mirrors observer.Result (the fields the report reads).
type observerResult struct {
	Target       string             `json:"target"`
	WallSeconds  float64            `json:"wallSeconds"`
	Phases       map[string]float64 `json:"phaseSeconds"`
	VmHWMKiB     int64              `json:"vmHWMKiB"`
	Requests     int                `json:"observationRequests"`
	HTTPRequests int                `json:"httpRequests"`
	Skipped      []string           `json:"skipped"`
	Snapshot     struct {
		Nodes, Namespaces, Workloads, Revisions, Tags, Policies, HelmReleases int
		Pods, SidecarPods, AmbientPods                                        int
	} `json:"snapshot"`
	Compatibility struct {
		Components, Nodes int
		Findings          int
		BySeverity        map[string]int
		Codes             map[string]int
		OK                bool
	} `json:"compatibility"`
	Plan struct {
		Steps, Checks, Findings int
		Codes                   map[string]int
		Waived                  []string
		Runnable                bool
		BlockedSteps            int
		FirstBlocked            string
		Blocked                 string
	} `json:"plan"`
	Error string `json:"error"`
}

// timeV is what /usr/bin/time -v reports.
type timeV struct {
	WallSeconds float64
	MaxRSSKiB   int64
	UserSeconds float64
	SysSeconds  float64
	Exit        int
}

func readTimeV(path string) (timeV, error) {
	var t timeV
	b, err := os.ReadFile(path)
	if err != nil {
		return t, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		k, v, ok := strings.Cut(l, ": ")
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(k, "Elapsed (wall clock) time"):
			t.WallSeconds = parseClock(v)
		case k == "Maximum resident set size (kbytes)":
			t.MaxRSSKiB, _ = strconv.ParseInt(v, 10, 64)
		case k == "User time (seconds)":
			t.UserSeconds, _ = strconv.ParseFloat(v, 64)
		case k == "System time (seconds)":
			t.SysSeconds, _ = strconv.ParseFloat(v, 64)
		case k == "Exit status":
			t.Exit, _ = strconv.Atoi(v)
		}
	}
	if t.WallSeconds == 0 && t.MaxRSSKiB == 0 {
		return t, fmt.Errorf("%s: no /usr/bin/time -v output", path)
	}
	return t, nil
}

// parseClock reads h:mm:ss or m:ss.ss.
func parseClock(v string) float64 {
	parts := strings.Split(v, ":")
	total := 0.0
	for _, p := range parts {
		f, _ := strconv.ParseFloat(p, 64)
		total = total*60 + f
	}
	return total
}

// auditCount is the requests one user made, from the API server's audit log.
type auditCount struct {
	Total       int
	ByVerb      map[string]int
	ByResource  map[string]int
	UserAgents  map[string]int
	Subresource map[string]int
}

// readAudit counts ResponseComplete events (one per request; the bench's policy omits the other
// stages) per user, leaving out the setup's own requests.
func readAudit(path string) (map[string]*auditCount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]*auditCount{}
	seen := map[string]bool{}
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var ev struct {
				AuditID string `json:"auditID"`
				Stage   string `json:"stage"`
				Verb    string `json:"verb"`
				User    struct {
					Username string `json:"username"`
				} `json:"user"`
				UserAgent string `json:"userAgent"`
				ObjectRef *struct {
					Resource    string `json:"resource"`
					Subresource string `json:"subresource"`
					APIGroup    string `json:"apiGroup"`
				} `json:"objectRef"`
				RequestURI string `json:"requestURI"`
			}
			if json.Unmarshal(line, &ev) == nil && ev.Stage != "RequestReceived" && ev.Stage != "ResponseStarted" &&
				ev.UserAgent != SetupUserAgent && !seen[ev.AuditID] {
				seen[ev.AuditID] = true
				c := out[ev.User.Username]
				if c == nil {
					c = &auditCount{ByVerb: map[string]int{}, ByResource: map[string]int{}, UserAgents: map[string]int{}, Subresource: map[string]int{}}
					out[ev.User.Username] = c
				}
				c.Total++
				c.ByVerb[ev.Verb]++
				ua := ev.UserAgent
				if i := strings.IndexAny(ua, " /"); i > 0 {
					ua = ua[:i]
				}
				c.UserAgents[ua]++
				res := "(non-resource) " + ev.RequestURI
				if ev.ObjectRef != nil {
					res = ev.ObjectRef.Resource
					if ev.ObjectRef.APIGroup != "" {
						res += "." + ev.ObjectRef.APIGroup
					}
					if ev.ObjectRef.Subresource != "" {
						c.Subresource[ev.ObjectRef.Subresource]++
						res += "/" + ev.ObjectRef.Subresource
					}
				} else if i := strings.IndexByte(res, '?'); i > 0 {
					res = res[:i]
				}
				c.ByResource[ev.Verb+" "+res]++
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// istioctlMessages counts `istioctl x precheck -o json` messages by level.
func istioctlMessages(path string) (map[string]int, map[string]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	byLevel, byCode := map[string]int{}, map[string]int{}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return byLevel, byCode, nil
	}
	// The JSON array may follow other output; start at the first '['.
	if i := strings.IndexByte(s, '['); i > 0 {
		s = s[i:]
	}
	var msgs []map[string]any
	if err := json.Unmarshal([]byte(s), &msgs); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, m := range msgs {
		lvl, _ := m["level"].(string)
		code, _ := m["code"].(string)
		byLevel[lvl]++
		byCode[code]++
	}
	return byLevel, byCode, nil
}

func reportCmd(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	dir := fs.String("dir", "", "the bench's run folder")
	audit := fs.String("audit", "", "the API server's audit log")
	title := fs.String("title", "", "title line")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *audit == "" {
		return errors.New("report: -dir and -audit are required")
	}
	var setup SetupResult
	if b, err := os.ReadFile(filepath.Join(*dir, "setup.json")); err == nil {
		_ = json.Unmarshal(b, &setup)
	}
	var ours observerResult
	b, err := os.ReadFile(filepath.Join(*dir, "ours.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &ours); err != nil {
		return err
	}
	oursT, err := readTimeV(filepath.Join(*dir, "ours.time"))
	if err != nil {
		return err
	}
	istT, err := readTimeV(filepath.Join(*dir, "istioctl.time"))
	if err != nil {
		return err
	}
	lv, codes, msgErr := istioctlMessages(filepath.Join(*dir, "istioctl.out"))
	counts, err := readAudit(*audit)
	if err != nil {
		return err
	}
	oursA := counts[ReaderUser("ambientkit")]
	istA := counts[ReaderUser("istioctl")]
	if oursA == nil {
		oursA = &auditCount{}
	}
	if istA == nil {
		istA = &auditCount{}
	}

	var w strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&w, format, a...) }
	if *title != "" {
		p("## %s\n\n", *title)
	}
	p("Cluster: %d kwok nodes, %d namespaces %v, %d Deployments, %d application pods (%d pods in all, %d Running; %d with a sidecar, %d enrolled in ambient), %d policies, %d waypoints.\n\n",
		setup.Nodes, setup.Namespaces, setup.NamespaceClass, setup.Deployments, setup.AppPods, setup.PodsInCluster, setup.PodsRunning,
		setup.SidecarPods, setup.AmbientEnrolled, setup.Policies, setup.Waypoints)
	ratio := func(a, b float64) string {
		if b == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f×", a/b)
	}
	p("| | ambientkit: observe.Live + ComputeCompatibility + PlanUpgrade → %s | istioctl x precheck | istioctl ÷ ambientkit |\n", ours.Target)
	p("|---|---|---|---|\n")
	p("| wall time, whole process (s) | %.2f | %.2f | %s |\n", oursT.WallSeconds, istT.WallSeconds, ratio(istT.WallSeconds, oursT.WallSeconds))
	p("| CPU time user+sys (s) | %.2f | %.2f | %s |\n", oursT.UserSeconds+oursT.SysSeconds, istT.UserSeconds+istT.SysSeconds,
		ratio(istT.UserSeconds+istT.SysSeconds, oursT.UserSeconds+oursT.SysSeconds))
	p("| peak RSS (MiB, /usr/bin/time -v) | %.1f | %.1f | %s |\n", float64(oursT.MaxRSSKiB)/1024, float64(istT.MaxRSSKiB)/1024,
		ratio(float64(istT.MaxRSSKiB), float64(oursT.MaxRSSKiB)))
	p("| API requests (API server audit log) | %d | %d | %s |\n", oursA.Total, istA.Total, ratio(float64(istA.Total), float64(oursA.Total)))
	p("| API requests (client side) | %d (RoundTripper); Observation.Requests %d | – | |\n", ours.HTTPRequests, ours.Requests)
	p("| exit status | %d | %d | |\n", oursT.Exit, istT.Exit)
	p("\n")
	phases := make([]string, 0, len(ours.Phases))
	for k := range ours.Phases {
		phases = append(phases, k)
	}
	sort.Strings(phases)
	var ph []string
	for _, k := range phases {
		ph = append(ph, fmt.Sprintf("%s %.2fs", k, ours.Phases[k]))
	}
	p("ambientkit phases (inside the process): %s; VmHWM %.1f MiB.\n\n", strings.Join(ph, ", "), float64(ours.VmHWMKiB)/1024)

	p("What each side checked:\n\n")
	p("- ambientkit: snapshot of %d nodes, %d namespaces, %d workloads, %d pods (%d sidecar, %d ambient), %d revisions, %d tags, %d policies, %d Helm releases; "+
		"ComputeCompatibility gave %d component verdicts, %d node verdicts and %d findings %v (codes %v); "+
		"PlanUpgrade made %d steps with %d pre/post checks and %d findings %v (waived %v, runnable %v, %d steps held back%s%s).\n",
		ours.Snapshot.Nodes, ours.Snapshot.Namespaces, ours.Snapshot.Workloads, ours.Snapshot.Pods, ours.Snapshot.SidecarPods, ours.Snapshot.AmbientPods,
		ours.Snapshot.Revisions, ours.Snapshot.Tags, ours.Snapshot.Policies, ours.Snapshot.HelmReleases,
		ours.Compatibility.Components, ours.Compatibility.Nodes, ours.Compatibility.Findings, ours.Compatibility.BySeverity, ours.Compatibility.Codes,
		ours.Plan.Steps, ours.Plan.Checks, ours.Plan.Findings, ours.Plan.Codes, ours.Plan.Waived, ours.Plan.Runnable, ours.Plan.BlockedSteps,
		blockedNote(ours.Plan.FirstBlocked), blockedNote(ours.Plan.Blocked))
	if ours.Error != "" {
		p("  ERROR: %s\n", ours.Error)
	}
	if msgErr != nil {
		p("- istioctl: could not read its messages: %v\n", msgErr)
	} else {
		p("- istioctl x precheck: Kubernetes version (1 check), create permissions by SelfSubjectAccessReview (11), Gateway API CRD versions, "+
			"and the analyzer \"upgrade precheck\" (maturity.AlphaAnalyzer over Namespaces, Services, Pods, Deployments in all namespaces); "+
			"%d messages at --output-threshold Info %v (codes %v).\n", sum(lv), lv, codes)
	}
	p("\nRequests by kind (audit log):\n\n")
	p("- ambientkit: %s\n", topN(oursA.ByResource, 40))
	p("- istioctl: %s\n", topN(istA.ByResource, 40))
	for _, sub := range []string{"exec", "portforward", "proxy", "log", "attach"} {
		if istA.Subresource[sub] > 0 || oursA.Subresource[sub] > 0 {
			p("- pod subresource %q: ambientkit %d, istioctl %d\n", sub, oursA.Subresource[sub], istA.Subresource[sub])
		}
	}
	p("- user agents: ambientkit %v, istioctl %v\n", oursA.UserAgents, istA.UserAgents)
	var st []string
	for _, t := range setup.Timings {
		st = append(st, fmt.Sprintf("%s %.1fs", t.Name, t.Seconds))
	}
	p("\nSetup: %s. Fake istiod: %d webhook calls, %d failed, %d off the loopback.\n", strings.Join(st, ", "), setup.WebhookCalls, setup.WebhookFailures, setup.NonLoopback)
	out := w.String()
	fmt.Print(out)
	return os.WriteFile(filepath.Join(*dir, "report.md"), []byte(out), 0o644)
}

func blockedNote(b string) string {
	if b == "" {
		return ""
	}
	return "; " + b
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func topN(m map[string]int, n int) string {
	type kv struct {
		k string
		v int
	}
	var l []kv
	for k, v := range m {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool {
		if l[i].v != l[j].v {
			return l[i].v > l[j].v
		}
		return l[i].k < l[j].k
	})
	var parts []string
	for i, e := range l {
		if i == n {
			parts = append(parts, fmt.Sprintf("… %d more", len(l)-n))
			break
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", e.k, e.v))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
