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
	"time"
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

// auditCount is the requests one tool made in one round, from the API server's audit log.
type auditCount struct {
	Total       int
	ByResource  map[string]int
	UserAgents  map[string]int
	Subresource map[string]int
}

func (c *auditCount) add(verb, res, sub, ua string) {
	if c.ByResource == nil {
		c.ByResource, c.UserAgents, c.Subresource = map[string]int{}, map[string]int{}, map[string]int{}
	}
	c.Total++
	c.ByResource[verb+" "+res]++
	if sub != "" {
		c.Subresource[sub]++
	}
	if i := strings.IndexAny(ua, " /"); i > 0 {
		ua = ua[:i]
	}
	c.UserAgents[ua]++
}

// window is one measured process: tool, round and when it ran (runs.tsv).
type window struct {
	tool       string
	round      int
	start, end time.Time
}

func readRuns(path string) ([]window, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []window
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(l, "\t")
		if len(f) != 4 {
			continue
		}
		r, _ := strconv.Atoi(f[1])
		st, _ := strconv.ParseFloat(f[2], 64)
		en, _ := strconv.ParseFloat(f[3], 64)
		out = append(out, window{tool: f[0], round: r, start: unixFloat(st), end: unixFloat(en)})
	}
	return out, nil
}

func unixFloat(f float64) time.Time {
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9))
}

// readAudit counts the requests of each reader (tool) per round: ResponseComplete events (one per
// request; the bench's policy omits the other stages) of the tool's ServiceAccount, put in the round
// whose time window holds requestReceivedTimestamp. The setup's own requests are left out; requests
// outside every window are counted under round 0.
func readAudit(path string, runs []window) (map[string]map[int]*auditCount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]map[int]*auditCount{}
	seen := map[string]bool{}
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var ev struct {
				AuditID  string    `json:"auditID"`
				Stage    string    `json:"stage"`
				Verb     string    `json:"verb"`
				Received time.Time `json:"requestReceivedTimestamp"`
				User     struct {
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
				tool := ""
				for _, rd := range Readers {
					if ev.User.Username == ReaderUser(rd) {
						tool = rd
					}
				}
				if tool != "" {
					round := 0
					for _, w := range runs {
						if w.tool == tool && !ev.Received.Before(w.start.Add(-time.Second)) && !ev.Received.After(w.end.Add(time.Second)) {
							round = w.round
						}
					}
					if out[tool] == nil {
						out[tool] = map[int]*auditCount{}
					}
					c := out[tool][round]
					if c == nil {
						c = &auditCount{}
						out[tool][round] = c
					}
					res, sub := "(non-resource) "+ev.RequestURI, ""
					if ev.ObjectRef != nil {
						res = ev.ObjectRef.Resource
						if ev.ObjectRef.APIGroup != "" {
							res += "." + ev.ObjectRef.APIGroup
						}
						if sub = ev.ObjectRef.Subresource; sub != "" {
							res += "/" + sub
						}
					} else if i := strings.IndexByte(res, '?'); i > 0 {
						res = res[:i]
					}
					c.add(ev.Verb, res, sub, ev.UserAgent)
				}
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

// stat is a median with its range over the rounds.
type stat struct{ med, min, max float64 }

func statOf(v []float64) stat {
	if len(v) == 0 {
		return stat{}
	}
	c := append([]float64(nil), v...)
	sort.Float64s(c)
	m := c[len(c)/2]
	if len(c)%2 == 0 {
		m = (c[len(c)/2-1] + c[len(c)/2]) / 2
	}
	return stat{m, c[0], c[len(c)-1]}
}

func (s stat) String(format string) string {
	if s.min == s.max {
		return fmt.Sprintf(format, s.med)
	}
	return fmt.Sprintf(format+" ("+format+"–"+format+")", s.med, s.min, s.max)
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
	rounds := fs.Int("rounds", 1, "measuring rounds (files ours-<i>.* and istioctl-<i>.*)")
	title := fs.String("title", "", "title line")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *audit == "" || *rounds < 1 {
		return errors.New("report: -dir, -audit and -rounds ≥ 1 are required")
	}
	var setup SetupResult
	if b, err := os.ReadFile(filepath.Join(*dir, "setup.json")); err == nil {
		_ = json.Unmarshal(b, &setup)
	}
	runs, err := readRuns(filepath.Join(*dir, "runs.tsv"))
	if err != nil {
		return err
	}
	counts, err := readAudit(*audit, runs)
	if err != nil {
		return err
	}
	var ours []observerResult
	var oursWall, oursCPU, oursRSS, istWall, istCPU, istRSS, oursReq, istReq, oursObserve []float64
	var oursExit, istExit []string
	for i := 1; i <= *rounds; i++ {
		var o observerResult
		b, err := os.ReadFile(filepath.Join(*dir, fmt.Sprintf("ours-%d.json", i)))
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		ours = append(ours, o)
		ot, err := readTimeV(filepath.Join(*dir, fmt.Sprintf("ours-%d.time", i)))
		if err != nil {
			return err
		}
		it, err := readTimeV(filepath.Join(*dir, fmt.Sprintf("istioctl-%d.time", i)))
		if err != nil {
			return err
		}
		oursWall, istWall = append(oursWall, ot.WallSeconds), append(istWall, it.WallSeconds)
		oursCPU, istCPU = append(oursCPU, ot.UserSeconds+ot.SysSeconds), append(istCPU, it.UserSeconds+it.SysSeconds)
		oursRSS, istRSS = append(oursRSS, float64(ot.MaxRSSKiB)/1024), append(istRSS, float64(it.MaxRSSKiB)/1024)
		oursExit, istExit = append(oursExit, strconv.Itoa(ot.Exit)), append(istExit, strconv.Itoa(it.Exit))
		oursObserve = append(oursObserve, o.Phases["observe"])
		oa, ia := counts["ambientkit"][i], counts["istioctl"][i]
		if oa == nil {
			oa = &auditCount{}
		}
		if ia == nil {
			ia = &auditCount{}
		}
		oursReq, istReq = append(oursReq, float64(oa.Total)), append(istReq, float64(ia.Total))
	}
	lv, codes, msgErr := istioctlMessages(filepath.Join(*dir, "istioctl-1.out"))
	o1 := ours[0]
	oursA, istA := counts["ambientkit"][1], counts["istioctl"][1]
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
	ratio := func(a, b stat) string {
		if b.med == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f×", a.med/b.med)
	}
	row := func(name, format string, o, i []float64) {
		so, si := statOf(o), statOf(i)
		p("| %s | %s | %s | %s |\n", name, so.String(format), si.String(format), ratio(si, so))
	}
	p("Median of %d rounds (range in brackets), each a separate process, one after the other:\n\n", *rounds)
	p("| | ambientkit: observe.Live + ComputeCompatibility + PlanUpgrade → %s | istioctl x precheck | istioctl ÷ ambientkit |\n", o1.Target)
	p("|---|---|---|---|\n")
	row("wall time, whole process (s)", "%.2f", oursWall, istWall)
	row("CPU time, user+sys (s)", "%.2f", oursCPU, istCPU)
	row("peak RSS (MiB, /usr/bin/time -v)", "%.1f", oursRSS, istRSS)
	row("API requests (API server audit log)", "%.0f", oursReq, istReq)
	p("| API requests (client side) | %d (RoundTripper), Observation.Requests %d | – | |\n", o1.HTTPRequests, o1.Requests)
	p("| exit status | %s | %s | |\n", strings.Join(oursExit, ", "), strings.Join(istExit, ", "))
	if extra := counts["ambientkit"][0]; extra != nil {
		p("\n(%d ambientkit requests fell outside every round's window.)\n", extra.Total)
	}
	if extra := counts["istioctl"][0]; extra != nil {
		p("\n(%d istioctl requests fell outside every round's window.)\n", extra.Total)
	}
	p("\n")
	phases := make([]string, 0, len(o1.Phases))
	for k := range o1.Phases {
		phases = append(phases, k)
	}
	sort.Strings(phases)
	var ph []string
	for _, k := range phases {
		ph = append(ph, fmt.Sprintf("%s %.3fs", k, o1.Phases[k]))
	}
	var hwm []float64
	for _, o := range ours {
		hwm = append(hwm, float64(o.VmHWMKiB)/1024)
	}
	p("ambientkit inside the process, round 1: %s; observe over the rounds %s s; VmHWM %s MiB.\n\n",
		strings.Join(ph, ", "), statOf(oursObserve).String("%.2f"), statOf(hwm).String("%.1f"))

	p("What each side checked (round 1):\n\n")
	p("- ambientkit: snapshot of %d nodes, %d namespaces, %d workloads, %d pods (%d sidecar, %d ambient), %d revisions, %d tags, %d policies, %d Helm releases; "+
		"ComputeCompatibility gave %d component verdicts, %d node verdicts and %d findings %v (codes %v); "+
		"PlanUpgrade made %d steps with %d pre/post checks and %d findings %v (waived %v, runnable %v, %d steps held back%s%s).\n",
		o1.Snapshot.Nodes, o1.Snapshot.Namespaces, o1.Snapshot.Workloads, o1.Snapshot.Pods, o1.Snapshot.SidecarPods, o1.Snapshot.AmbientPods,
		o1.Snapshot.Revisions, o1.Snapshot.Tags, o1.Snapshot.Policies, o1.Snapshot.HelmReleases,
		o1.Compatibility.Components, o1.Compatibility.Nodes, o1.Compatibility.Findings, o1.Compatibility.BySeverity, o1.Compatibility.Codes,
		o1.Plan.Steps, o1.Plan.Checks, o1.Plan.Findings, o1.Plan.Codes, o1.Plan.Waived, o1.Plan.Runnable, o1.Plan.BlockedSteps,
		blockedNote(o1.Plan.FirstBlocked), blockedNote(o1.Plan.Blocked))
	for i, o := range ours {
		if o.Error != "" {
			p("  ERROR in round %d: %s\n", i+1, o.Error)
		}
	}
	if msgErr != nil {
		p("- istioctl: could not read its messages: %v\n", msgErr)
	} else {
		p("- istioctl x precheck: Kubernetes version (1 check), create permissions by SelfSubjectAccessReview (11), Gateway API CRD versions, "+
			"and the analyzer \"upgrade precheck\" (maturity.AlphaAnalyzer over Namespaces, Services, Pods, Deployments in all namespaces); "+
			"%d messages at --output-threshold Info %v (codes %v).\n", sum(lv), lv, codes)
	}
	p("\nRequests by kind (audit log, round 1):\n\n")
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
