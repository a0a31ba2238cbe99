package limit

import (
	"reflect"
	"testing"
	"time"
)

const s = time.Second

func TestLimit(t *testing.T) {
	sts := func(name string) Pod { return Pod{Name: name, Grace: 60 * s, Budget: "db/ledger", Hold: 60 * s} }
	web := func(name string) Pod { return Pod{Name: name, Grace: 20 * s, Budget: "shop/web", Hold: 0} }
	for _, tc := range []struct {
		name  string
		in    Input
		total time.Duration
		drain time.Duration // of the first wave
	}{
		{"slowest pod of the wave, then its ztunnel, then the settle", Input{Waves: []Wave{{Settle: s, Nodes: []Node{
			{Name: "a", ZtunnelReady: 3 * s, Pods: []Pod{{Grace: 10 * s}, {Grace: 20 * s}}},
			{Name: "b", ZtunnelReady: 3 * s, Pods: []Pod{{Grace: 5 * s}}},
			{Name: "c", ZtunnelReady: 3 * s},
		}}}}, 24 * s, 20 * s},
		{"a node without pods still waits for its ztunnel", Input{Waves: []Wave{{Nodes: []Node{{Name: "a", ZtunnelReady: 3 * s}}}}}, 3 * s, 0},
		{"a budget of one serialises a StatefulSet spread over the wave", Input{Waves: []Wave{{Nodes: []Node{
			{Name: "a", Pods: []Pod{sts("db/ledger-0")}}, {Name: "b", Pods: []Pod{sts("db/ledger-1")}}, {Name: "c", Pods: []Pod{sts("db/ledger-2")}},
		}}}}, 180 * s, 180 * s},
		{"a budget of two lets two terminate at a time", Input{Allowed: map[string]int{"db/ledger": 2}, Waves: []Wave{{Nodes: []Node{
			{Name: "a", Pods: []Pod{sts("db/ledger-0")}}, {Name: "b", Pods: []Pod{sts("db/ledger-1")}}, {Name: "c", Pods: []Pod{sts("db/ledger-2")}},
		}}}}, 120 * s, 120 * s},
		{"a ReplicaSet's budget is free once the replacement is ready", Input{Waves: []Wave{{Nodes: []Node{
			{Name: "a", Pods: []Pod{web("shop/web-1"), web("shop/web-2")}}, {Name: "b", Pods: []Pod{web("shop/web-3")}},
		}}}}, 20 * s, 20 * s},
		{"budget serialisation and other pods: the longer decides", Input{Waves: []Wave{{Settle: 2 * s, Nodes: []Node{
			{Name: "a", ZtunnelReady: 3 * s, Pods: []Pod{sts("db/ledger-0"), {Grace: 30 * s}}},
			{Name: "b", ZtunnelReady: 3 * s, Pods: []Pod{sts("db/ledger-1")}},
		}}}}, 125 * s, 120 * s},
		{"waves add up; blue-green has no ztunnel per node", Input{Waves: []Wave{
			{Settle: s, Nodes: []Node{{Name: "a", Pods: []Pod{{Grace: 10 * s}}}, {Name: "b", Pods: []Pod{{Grace: 10 * s}}}}},
			{Settle: s, Nodes: []Node{{Name: "c", Pods: []Pod{{Grace: 10 * s}}}}},
		}}, 22 * s, 10 * s},
		{"a budget allowing none counts as one", Input{Allowed: map[string]int{"db/ledger": 0}, Waves: []Wave{{Nodes: []Node{
			{Name: "a", Pods: []Pod{sts("db/ledger-0")}}, {Name: "b", Pods: []Pod{sts("db/ledger-1")}},
		}}}}, 120 * s, 120 * s},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Limit(tc.in)
			if r.Total != tc.total {
				t.Errorf("total %s, want %s (%+v)", r.Total, tc.total, r.Waves)
			}
			if len(r.Waves) > 0 && r.Waves[0].Drain != tc.drain {
				t.Errorf("first wave drained at %s, want %s", r.Waves[0].Drain, tc.drain)
			}
		})
	}
	r := Limit(Input{Waves: []Wave{{Settle: s, Nodes: []Node{
		{Name: "a", ZtunnelReady: 3 * s, Pods: []Pod{{Grace: 10 * s}}}, {Name: "b", ZtunnelReady: 3 * s, Pods: []Pod{{Grace: 20 * s}, {Grace: 5 * s}}},
	}}}})
	want := WaveLimit{Drain: 20 * s, SlowestNode: "b", Longest: 20 * s, Ztunnel: 3 * s, Settle: s, Total: 24 * s, Pods: 3}
	if !reflect.DeepEqual(r.Waves[0], want) {
		t.Errorf("wave %+v, want %+v", r.Waves[0], want)
	}
}

func TestWavesOf(t *testing.T) {
	nodeByNode := []Step{{ID: "ztunnel/ztunnel/on-delete"}}
	for b, nodes := range [][]string{{"general-0", "batch-0"}, {"general-1"}} {
		for _, n := range nodes {
			for _, a := range []string{"cordon", "drain", "replace", "wait", "uncordon"} {
				nodeByNode = append(nodeByNode, Step{ID: "ztunnel/ztunnel/node/" + n + "/" + a})
			}
		}
		nodeByNode = append(nodeByNode, Step{ID: "ztunnel/ztunnel/batch/" + string(rune('1'+b)) + "/health", Gate: true, Settle: time.Duration(b+1) * s})
	}
	nodeByNode = append(nodeByNode, Step{ID: "ztunnel/ztunnel/rolling-update"})
	want := []WaveNodes{{Nodes: []string{"general-0", "batch-0"}, Settle: s}, {Nodes: []string{"general-1"}, Settle: 2 * s}}
	if got := WavesOf(nodeByNode); !reflect.DeepEqual(got, want) {
		t.Errorf("node by node: %+v, want %+v", got, want)
	}

	blueGreen := []Step{{ID: "ztunnel/bluegreen/install-green"}, {ID: "ztunnel/bluegreen/cordon/general-0"}, {ID: "ztunnel/bluegreen/cordon/general-1"},
		{ID: "ztunnel/bluegreen/drain/general-0"}, {ID: "ztunnel/bluegreen/batch/1/health", Gate: true, Settle: 3 * s},
		{ID: "ztunnel/bluegreen/batch/2/approve-local-storage"}, {ID: "ztunnel/bluegreen/drain/general-1"},
		{ID: "ztunnel/bluegreen/batch/2/health", Gate: true, Settle: 3 * s}, {ID: "ztunnel/bluegreen/blue-empty"}}
	want = []WaveNodes{{Nodes: []string{"general-0"}, Settle: 3 * s}, {Nodes: []string{"general-1"}, Settle: 3 * s}}
	if got := WavesOf(blueGreen); !reflect.DeepEqual(got, want) {
		t.Errorf("blue-green: %+v, want %+v", got, want)
	}
	for id, node := range map[string]string{
		"ztunnel/ztunnel/node/general-3/drain":       "general-3",
		"hop1/ztunnel/ztunnel/node/a.b.c/wait":       "a.b.c",
		"ztunnel/bluegreen/drain/batch-7":            "batch-7",
		"ztunnel/bluegreen/relabel/batch-7/switch":   "batch-7",
		"ztunnel/bluegreen/cordon/batch-7":           "",
		"ztunnel/bluegreen/drain/batch-7/undo":       "",
		"ztunnel/ztunnel/batch/2/health":             "",
		"ztunnel/bluegreen/green-capacity":           "",
		"ztunnel/bluegreen/nodepool/general/relabel": "",
	} {
		if got := NodeOf(id); got != node {
			t.Errorf("NodeOf(%q) = %q, want %q", id, got, node)
		}
	}
}

func TestMaxOverlap(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(a, b int) Interval { return Interval{t0.Add(time.Duration(a) * s), t0.Add(time.Duration(b) * s)} }
	for _, tc := range []struct {
		ivs  []Interval
		want int
	}{
		{nil, 0},
		{[]Interval{at(0, 10), at(10, 20), at(20, 30)}, 1}, // one after the other, touching
		{[]Interval{at(0, 10), at(5, 15), at(6, 7), at(14, 20)}, 3},
		{[]Interval{at(0, 10), at(0, 10), at(0, 10)}, 3},
	} {
		if got := MaxOverlap(tc.ivs); got != tc.want {
			t.Errorf("MaxOverlap(%v) = %d, want %d", tc.ivs, got, tc.want)
		}
	}
}
