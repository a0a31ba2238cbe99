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
	"runtime"
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

// Tools measured, in the order the script runs them each round, and the reader (ServiceAccount)
// each runs as.
var tools = []struct{ name, reader, title string }{
	{"ours", "ambientkit", "ours"},
	{"precheck", "istioctl", "istioctl x precheck"},
	{"analyze", "istioctl", "istioctl analyze -A"},
	{"floor", "floor", "LIST floor"},
	{"requests", "floor", "ours' requests undecoded"},
}

// window is one measured process: tool, size (nodes), round and when it ran (runs.tsv).
type window struct {
	tool        string
	size, round int
	start, end  time.Time
	// others is the CPU time (s) the rest of the machine used meanwhile (not the control plane, not
	// the tool).
	others float64
}

func readRuns(path string) ([]window, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []window
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(l, "\t")
		if len(f) < 5 {
			continue
		}
		others := 0.0
		if len(f) > 5 {
			others, _ = strconv.ParseFloat(f[5], 64)
		}
		size, _ := strconv.Atoi(f[1])
		r, _ := strconv.Atoi(f[2])
		st, _ := strconv.ParseFloat(f[3], 64)
		en, _ := strconv.ParseFloat(f[4], 64)
		out = append(out, window{tool: f[0], size: size, round: r, start: unixFloat(st), end: unixFloat(en), others: others})
	}
	return out, nil
}

func unixFloat(f float64) time.Time {
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9))
}

// runKey names one measured process.
type runKey struct {
	tool        string
	size, round int
}

// readAudit counts the requests of each measured process: ResponseComplete events (one per
// request; the bench's policy omits the other stages) of the tool's ServiceAccount whose
// requestReceivedTimestamp lies in the process's window (runs.tsv). The setup's own requests are
// left out; a reader's requests outside every window are counted under round 0 of size 0.
func readAudit(path string, runs []window) (map[runKey]*auditCount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[runKey]*auditCount{}
	seen := map[string]bool{}
	users := map[string]bool{}
	for _, rd := range Readers {
		users[ReaderUser(rd)] = true
	}
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
				ev.UserAgent != SetupUserAgent && !seen[ev.AuditID] && users[ev.User.Username] {
				seen[ev.AuditID] = true
				key := runKey{}
				for _, w := range runs {
					if ReaderUser(readerOf(w.tool)) == ev.User.Username &&
						!ev.Received.Before(w.start.Add(-time.Second)) && !ev.Received.After(w.end.Add(time.Second)) {
						key = runKey{w.tool, w.size, w.round}
					}
				}
				c := out[key]
				if c == nil {
					c = &auditCount{}
					out[key] = c
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
		if err == io.EOF {
			break
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func readerOf(tool string) string {
	for _, t := range tools {
		if t.name == tool {
			return t.reader
		}
	}
	return ""
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

// measured is one tool's numbers at one size, one value per round.
type measured struct {
	wall, cpu, rss, requests []float64
	// others is the rest of the machine's CPU use during each round's window, in cores.
	others []float64
	exits  []string
}

// sizeData is everything the report reads about one size.
type sizeData struct {
	nodes  int
	dir    string
	setup  SetupResult
	ours   []observerResult
	floors []floorResult
	tools  map[string]*measured
}

// floorResult mirrors floor.Result.
type floorResult struct {
	WallSeconds float64 `json:"wallSeconds"`
	Lists       int     `json:"lists"`
	Requests    int     `json:"requests"`
	Bytes       int64   `json:"bytes"`
	VmHWMKiB    int64   `json:"vmHWMKiB"`
	Error       string  `json:"error"`
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// The columns of a measured tool.
func wallOf(m *measured) []float64 { return m.wall }
func rssOf(m *measured) []float64  { return m.rss }
func reqsOf(m *measured) []float64 { return m.requests }
func cpuOf(m *measured) []float64  { return m.cpu }

// med is the median of one column of one tool at one size.
func med(sd *sizeData, tool string, f func(*measured) []float64) float64 {
	return statOf(f(sd.tools[tool])).med
}

func reportCmd(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	dir := fs.String("dir", "", "the bench's run folder (one folder per size inside, named by its node count)")
	sizesFlag := fs.String("sizes", "", "the sizes measured (node counts, space-separated)")
	audit := fs.String("audit", "", "the API server's audit log")
	rounds := fs.Int("rounds", 1, "measuring rounds per size")
	title := fs.String("title", "", "title line")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *audit == "" || *rounds < 1 || *sizesFlag == "" {
		return errors.New("report: -dir, -sizes, -audit and -rounds ≥ 1 are required")
	}
	runs, err := readRuns(filepath.Join(*dir, "runs.tsv"))
	if err != nil {
		return err
	}
	counts, err := readAudit(*audit, runs)
	if err != nil {
		return err
	}
	sizes, err := readSizes(*dir, *sizesFlag, *rounds, runs, counts)
	if err != nil {
		return err
	}
	var w strings.Builder
	if *title != "" {
		fmt.Fprintf(&w, "## %s\n\n", *title)
	}
	writeSummary(&w, sizes, *rounds)
	for _, sd := range sizes {
		writeSize(&w, sd, counts)
	}
	if extra := counts[runKey{}]; extra != nil {
		fmt.Fprintf(&w, "\n(%d requests of the measured readers fell outside every window: %s.)\n", extra.Total, topN(extra.ByResource, 10))
	}
	out := w.String()
	fmt.Print(out)
	return os.WriteFile(filepath.Join(*dir, "report.md"), []byte(out), 0o644)
}

// readSizes reads what each size's rounds left in its folder: the setup, ours' and the floors'
// results, each tool's /usr/bin/time output, and the requests the audit log counted for it.
func readSizes(dir, sizesFlag string, rounds int, runs []window, counts map[runKey]*auditCount) ([]*sizeData, error) {
	var sizes []*sizeData
	for _, f := range strings.Fields(sizesFlag) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("-sizes: %q is not a node count", f)
		}
		sd := &sizeData{nodes: n, dir: filepath.Join(dir, f), tools: map[string]*measured{}}
		_ = readJSON(filepath.Join(sd.dir, "setup.json"), &sd.setup)
		for i := 1; i <= rounds; i++ {
			var o observerResult
			if err := readJSON(filepath.Join(sd.dir, fmt.Sprintf("ours-%d.json", i)), &o); err != nil {
				return nil, err
			}
			sd.ours = append(sd.ours, o)
			for _, f := range []string{"floor", "requests"} {
				var fl floorResult
				if err := readJSON(filepath.Join(sd.dir, fmt.Sprintf("%s-%d.json", f, i)), &fl); err != nil {
					return nil, err
				}
				sd.floors = append(sd.floors, fl)
			}
			for _, t := range tools {
				tv, err := readTimeV(filepath.Join(sd.dir, fmt.Sprintf("%s-%d.time", t.name, i)))
				if err != nil {
					return nil, err
				}
				m := sd.tools[t.name]
				if m == nil {
					m = &measured{}
					sd.tools[t.name] = m
				}
				m.wall = append(m.wall, tv.WallSeconds)
				m.cpu = append(m.cpu, tv.UserSeconds+tv.SysSeconds)
				m.rss = append(m.rss, float64(tv.MaxRSSKiB)/1024)
				m.exits = append(m.exits, strconv.Itoa(tv.Exit))
				req := 0
				if c := counts[runKey{t.name, n, i}]; c != nil {
					req = c.Total
				}
				m.requests = append(m.requests, float64(req))
				for _, w := range runs {
					if w.tool == t.name && w.size == n && w.round == i && tv.WallSeconds > 0 {
						m.others = append(m.others, w.others/tv.WallSeconds)
					}
				}
			}
		}
		sizes = append(sizes, sd)
	}
	return sizes, nil
}

// writeSummary writes the growth table, the ratios against the goals and the growth line.
func writeSummary(w *strings.Builder, sizes []*sizeData, rounds int) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	wall, rss, reqs, cpu := wallOf, rssOf, reqsOf, cpuOf
	p("Growth, one cluster grown between sizes; median of %d rounds, each tool a separate process, one after the other. "+
		"ours = observe.Live + ComputeCompatibility + PlanUpgrade; floor = paged LISTs of the kinds ours reads, same selectors and page size, "+
		"bodies read and not decoded, one kind after the other; ours' requests undecoded = exactly the requests ours made (watch-lists too), read the same way.\n\n", rounds)
	curve := tools[:4]
	p("| nodes | pods | wall s: ours | precheck | analyze | floor | peak RSS MiB: ours | precheck | analyze | floor | API requests: ours | precheck | analyze | floor |\n")
	p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, sd := range sizes {
		p("| %s | %s |", thousands(sd.nodes), thousands(sd.setup.PodsInCluster))
		for _, f := range []struct {
			get    func(*measured) []float64
			format string
		}{{wall, "%.2f"}, {rss, "%.0f"}, {reqs, "%.0f"}} {
			for _, t := range curve {
				p(" "+f.format+" |", med(sd, t.name, f.get))
			}
		}
		p("\n")
	}
	p("\n| nodes | ours ÷ precheck, wall (goal ≤ 0.50) | ours ÷ precheck, peak RSS (goal ≤ 0.25) | ours ÷ floor, wall (goal ≤ 1.50) | ours ÷ analyze, wall | ours ÷ analyze, peak RSS | ours ÷ its own requests undecoded, wall | CPU s: ours | precheck | analyze | floor | other processes, cores |\n")
	p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	goal := func(v, limit float64, check bool) string {
		s := fmt.Sprintf("%.2f", v)
		if check {
			if v <= limit {
				s += " ✓"
			} else {
				s += " ✗"
			}
		}
		return s
	}
	for _, sd := range sizes {
		big := sd.nodes >= 1000
		r := func(a, b string, f func(*measured) []float64) float64 {
			if d := med(sd, b, f); d > 0 {
				return med(sd, a, f) / d
			}
			return 0
		}
		var others []float64
		for _, t := range tools {
			others = append(others, sd.tools[t.name].others...)
		}
		p("| %s | %s | %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %s |\n", thousands(sd.nodes),
			goal(r("ours", "precheck", wall), 0.5, big), goal(r("ours", "precheck", rss), 0.25, big), goal(r("ours", "floor", wall), 1.5, big),
			r("ours", "analyze", wall), r("ours", "analyze", rss), r("ours", "requests", wall),
			med(sd, "ours", cpu), med(sd, "precheck", cpu), med(sd, "analyze", cpu), med(sd, "floor", cpu), statOf(others).String("%.2f"))
	}
	p("\n(✓/✗: the goals, checked at 1,000 nodes and more. Other processes: the CPU the rest of the machine used during the measured windows, "+
		"in cores of the %d, median (range); the measurements are only as good as this is low.)\n", runtime.NumCPU())
	if len(sizes) > 1 {
		first, last := sizes[0], sizes[len(sizes)-1]
		x := float64(last.nodes) / float64(first.nodes)
		p("\nGrowth from %s to %s nodes (×%.0f; linear would be ×%.1f): ", thousands(first.nodes), thousands(last.nodes), x, x)
		var parts []string
		for _, t := range tools {
			g := func(f func(*measured) []float64) float64 {
				if d := med(first, t.name, f); d > 0 {
					return med(last, t.name, f) / d
				}
				return 0
			}
			parts = append(parts, fmt.Sprintf("%s wall ×%.1f, RSS ×%.1f", t.title, g(wall), g(rss)))
		}
		p("%s.\n", strings.Join(parts, "; "))
	}

}

// writeSize writes one size's section: its cluster, each tool's measures, messages and requests.
func writeSize(w *strings.Builder, sd *sizeData, counts map[runKey]*auditCount) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	wall, rss, reqs, cpu := wallOf, rssOf, reqsOf, cpuOf
	p("\n### %s nodes\n\n", thousands(sd.nodes))
	st := sd.setup
	p("Cluster: %d kwok nodes, %d namespaces %v, %d Deployments, %d application pods (%d pods in all, %d Running; %d with a sidecar, %d enrolled in ambient), %d policies, %d waypoints.\n\n",
		st.Nodes, st.Namespaces, st.NamespaceClass, st.Deployments, st.AppPods, st.PodsInCluster, st.PodsRunning,
		st.SidecarPods, st.AmbientEnrolled, st.Policies, st.Waypoints)
	p("| | ours | istioctl x precheck | istioctl analyze -A | LIST floor | ours' requests undecoded |\n|---|---|---|---|---|---|\n")
	row := func(name, format string, f func(*measured) []float64) {
		p("| %s |", name)
		for _, t := range tools {
			p(" %s |", statOf(f(sd.tools[t.name])).String(format))
		}
		p("\n")
	}
	row("wall time, whole process (s)", "%.2f", wall)
	row("CPU time, user+sys (s)", "%.2f", cpu)
	row("peak RSS (MiB, /usr/bin/time -v)", "%.1f", rss)
	row("API requests (audit log)", "%.0f", reqs)
	row("other processes on the machine meanwhile (cores)", "%.2f", func(m *measured) []float64 { return m.others })
	p("| exit status |")
	for _, t := range tools {
		p(" %s |", strings.Join(sd.tools[t.name].exits, ", "))
	}
	p("\n")
	o1, f1 := sd.ours[0], sd.floors[0]
	var observe []float64
	for _, o := range sd.ours {
		observe = append(observe, o.Phases["observe"])
	}
	phases := make([]string, 0, len(o1.Phases))
	for k := range o1.Phases {
		phases = append(phases, k)
	}
	sort.Strings(phases)
	var ph []string
	for _, k := range phases {
		ph = append(ph, fmt.Sprintf("%s %.3fs", k, o1.Phases[k]))
	}
	p("\nours inside the process (round 1): %s; observe over the rounds %s s; %d requests client-side (Observation.Requests %d). "+
		"Floor: %d LISTs, %d requests, %.1f MiB of bodies.\n",
		strings.Join(ph, ", "), statOf(observe).String("%.2f"), o1.HTTPRequests, o1.Requests, f1.Lists, f1.Requests, float64(f1.Bytes)/(1<<20))
	p("\n- ours: snapshot of %d nodes, %d namespaces, %d workloads, %d pods (%d sidecar, %d ambient), %d revisions, %d tags, %d policies, %d Helm releases; "+
		"ComputeCompatibility: %d component verdicts, %d node verdicts, %d findings %v; PlanUpgrade: %d steps, %d pre/post checks, %d findings %v (%d steps held back).\n",
		o1.Snapshot.Nodes, o1.Snapshot.Namespaces, o1.Snapshot.Workloads, o1.Snapshot.Pods, o1.Snapshot.SidecarPods, o1.Snapshot.AmbientPods,
		o1.Snapshot.Revisions, o1.Snapshot.Tags, o1.Snapshot.Policies, o1.Snapshot.HelmReleases,
		o1.Compatibility.Components, o1.Compatibility.Nodes, o1.Compatibility.Findings, o1.Compatibility.Codes,
		o1.Plan.Steps, o1.Plan.Checks, o1.Plan.Findings, o1.Plan.Codes, o1.Plan.BlockedSteps)
	for i, o := range sd.ours {
		if o.Error != "" {
			p("  ERROR in round %d: %s\n", i+1, o.Error)
		}
	}
	for i, f := range sd.floors {
		if f.Error != "" {
			p("  floor ERROR in round %d (%s): %s\n", i/2+1, []string{"LIST floor", "ours' requests"}[i%2], f.Error)
		}
	}
	for _, t := range []struct{ name, what string }{
		{"precheck", "Kubernetes version, create permissions (SelfSubjectAccessReviews), Gateway API CRDs, the upgrade analyzer over namespaces, Services, pods, Deployments"},
		{"analyze", "every analyzer over every namespace"},
	} {
		lv, codes, err := istioctlMessages(filepath.Join(sd.dir, t.name+"-1.out"))
		if err != nil {
			p("- %s: could not read its messages: %v\n", t.name, err)
			continue
		}
		p("- istioctl %s (%s): %d messages %v (codes %v).\n", t.name, t.what, sum(lv), lv, codes)
	}
	p("\nRequests by kind (audit log, round 1):\n\n")
	for _, t := range tools {
		c := counts[runKey{t.name, sd.nodes, 1}]
		if c == nil {
			c = &auditCount{}
		}
		p("- %s: %s\n", t.title, topN(c.ByResource, 40))
		for _, sub := range []string{"exec", "portforward", "proxy", "log", "attach"} {
			if c.Subresource[sub] > 0 {
				p("  - pod subresource %q ×%d\n", sub, c.Subresource[sub])
			}
		}
	}
	var stt []string
	for _, t := range st.Timings {
		stt = append(stt, fmt.Sprintf("%s %.1fs", t.Name, t.Seconds))
	}
	p("\nSetup of this size: %s. Fake istiod: %d webhook calls, %d failed, %d off the loopback.\n", strings.Join(stt, ", "), st.WebhookCalls, st.WebhookFailures, st.NonLoopback)
}

// thousands writes n with thousands separators: 22002 → "22,002".
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
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
