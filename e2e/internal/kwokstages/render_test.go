package kwokstages

import (
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

type stage struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Selector struct {
			MatchExpressions []struct {
				Key      string   `json:"key"`
				Operator string   `json:"operator"`
				Values   []string `json:"values"`
			} `json:"matchExpressions"`
		} `json:"selector"`
		Delay *struct {
			DurationMilliseconds *int64 `json:"durationMilliseconds"`
			DurationFrom         *struct {
				ExpressionFrom string `json:"expressionFrom"`
			} `json:"durationFrom"`
		} `json:"delay"`
	} `json:"spec"`
}

func parse(t *testing.T, s string) map[string]stage {
	t.Helper()
	out := map[string]stage{}
	for _, doc := range strings.Split(s, "\n---\n") {
		var st stage
		if err := yaml.Unmarshal([]byte(doc), &st); err != nil {
			t.Fatalf("stage does not parse: %v\n%s", err, doc)
		}
		if st.Kind == "" {
			continue
		}
		if st.Kind != "Stage" {
			t.Fatalf("kind %q", st.Kind)
		}
		out[st.Metadata.Name] = st
	}
	return out
}

func keyOf(st stage, sub string) (string, string) {
	for _, e := range st.Spec.Selector.MatchExpressions {
		if strings.Contains(e.Key, sub) {
			return e.Key, e.Operator
		}
	}
	return "", ""
}

func TestRender(t *testing.T) {
	fast, err := Render(Options{})
	if err != nil || fast != YAML() {
		t.Fatalf("fast render differs from stages.yaml (err %v)", err)
	}
	stages := parse(t, fast)
	for _, n := range []string{"node-initialize", "node-heartbeat-with-lease", "pod-ready", "pod-start-unready", "pod-ready-after", "pod-complete", "pod-delete", "pod-delete-at-deadline"} {
		if _, ok := stages[n]; !ok {
			t.Errorf("stage %s missing", n)
		}
	}
	// Each opt-in stage and its fast twin use one predicate with opposite operators.
	for _, pair := range [][3]string{{"pod-ready", "pod-start-unready", "ready-after"}, {"pod-delete", "pod-delete-at-deadline", "timing"}} {
		k1, op1 := keyOf(stages[pair[0]], pair[2])
		k2, op2 := keyOf(stages[pair[1]], pair[2])
		if k1 == "" || k1 != k2 || op1 != "NotIn" || op2 != "In" {
			t.Errorf("%s/%s: predicates %q %s and %q %s", pair[0], pair[1], k1, op1, k2, op2)
		}
	}
	if d := stages["pod-delete-at-deadline"].Spec.Delay; d == nil || d.DurationFrom == nil || !strings.HasPrefix(d.DurationFrom.ExpressionFrom, ".metadata.deletionTimestamp") {
		t.Errorf("pod-delete-at-deadline does not wait for the deletionTimestamp: %+v", d)
	}
	if d := stages["pod-ready-after"].Spec.Delay; d == nil || d.DurationFrom == nil || !strings.Contains(d.DurationFrom.ExpressionFrom, AnnotationReadyAfter) || *d.DurationMilliseconds != 0 {
		t.Errorf("pod-ready-after delay: %+v", d)
	}

	o, err := ParseTiming(ModeRealistic, "")
	if err != nil || !o.GraceAll || o.ZtunnelReady != DefaultZtunnelReady {
		t.Fatalf("ParseTiming(realistic) = %+v, %v", o, err)
	}
	o.ZtunnelReady = 2500 * time.Millisecond
	real, err := Render(o)
	if err != nil {
		t.Fatal(err)
	}
	rs := parse(t, real)
	if k, _ := keyOf(rs["pod-delete-at-deadline"], "timing"); !strings.Contains(k, `// "realistic"`) {
		t.Errorf("realistic: grace is not the default: %q", k)
	}
	for _, n := range []string{"pod-ready", "pod-start-unready", "pod-ready-after"} {
		if k, _ := keyOf(rs[n], "ready-after"); !strings.Contains(k, `.metadata.labels.app == "ztunnel"`) {
			t.Errorf("realistic: %s does not delay ztunnel: %q", n, k)
		}
	}
	if ms := *rs["pod-ready-after"].Spec.Delay.DurationMilliseconds; ms != 2500 {
		t.Errorf("ztunnel delay %dms, want 2500", ms)
	}
	if o, err := ParseTiming("", "1s"); err != nil || o.GraceAll || o.ZtunnelReady != time.Second {
		t.Errorf("ParseTiming(\"\", 1s) = %+v, %v", o, err)
	}
	for _, bad := range [][2]string{{"slow", ""}, {"", "soon"}, {"", "-1s"}} {
		if _, err := ParseTiming(bad[0], bad[1]); err == nil {
			t.Errorf("ParseTiming(%q, %q) accepted", bad[0], bad[1])
		}
	}
}
