// Package kwokstages holds the kwok v0.8.0 Stage objects of the e2e clusters and renders them for a
// timing mode.
//
// The stages (stages.yaml) are kwok's "fast" ones, where a pod runs and turns Ready the moment it is
// bound and vanishes the moment it is deleted, plus opt-ins a pod asks for with annotations, so that
// one cluster can host fast suites and a suite or bench that needs real timing:
//
//   - AnnotationTiming: "realistic": the pod honours its termination grace period. The API server
//     sets deletionTimestamp to now + grace on delete or eviction; the pod stays Terminating until
//     then and is deleted within the second after (the API serves the timestamp in whole seconds,
//     cut down), as a kubelet does once its containers stopped.
//   - AnnotationReadyAfter: "<Go duration>": the pod turns Running at once and Ready that long after.
//   - AnnotationRunForever: a Job's pod is never completed.
//
// Render can also switch on cluster-wide timing: every pod honours its grace period (Options.GraceAll;
// a pod annotated timing: fast opts out), and every pod labelled app=ztunnel turns Ready only
// Options.ZtunnelReady after it started (its ready-after annotation, when set, wins). That makes
// the kube-apiserver dial nothing: kwok only patches and deletes objects.
package kwokstages

import (
	_ "embed"
	"fmt"
	"strings"
	"time"
)

// Annotations pods opt in with.
const (
	AnnotationTiming     = "e2e.ambientkit.io/timing"
	AnnotationReadyAfter = "e2e.ambientkit.io/ready-after"
	AnnotationRunForever = "e2e.ambientkit.io/run-forever"
	// TimingRealistic is the value of AnnotationTiming that makes a pod honour its grace period;
	// TimingFast, under Options.GraceAll, makes it vanish at once.
	TimingRealistic = "realistic"
	TimingFast      = "fast"
	// ZtunnelLabel selects the ztunnel pods Options.ZtunnelReady delays (the ztunnel chart's app label).
	ZtunnelLabel = "app=ztunnel"
)

//go:embed stages.yaml
var stagesYAML string

// YAML returns the stages as they are in stages.yaml: fast, with the per-pod opt-ins.
func YAML() string { return stagesYAML }

// Options say which cluster-wide timing to render.
type Options struct {
	// GraceAll makes every pod honour its grace period, not only the pods annotated timing: realistic.
	GraceAll bool
	// ZtunnelReady, when positive, delays the readiness of every app=ztunnel pod by this much.
	ZtunnelReady time.Duration
}

// The predicates of stages.yaml Render rewrites, each with the number of stages using it.
const (
	graceKey      = `'.metadata.annotations["e2e.ambientkit.io/timing"] == "realistic"'`
	graceAllKey   = `'(.metadata.annotations["e2e.ambientkit.io/timing"] // "realistic") == "realistic"'`
	graceUses     = 2
	delayedKey    = `'.metadata.annotations["e2e.ambientkit.io/ready-after"] != null'`
	delayedZtKey  = `'(.metadata.annotations["e2e.ambientkit.io/ready-after"] != null) or (.metadata.labels.app == "ztunnel")'`
	delayedUses   = 3
	ztunnelMarker = "durationMilliseconds: 0 # ztunnel-ready"
)

// Render returns the stages for o: YAML() with the cluster-wide rules of o switched on.
func Render(o Options) (string, error) {
	out := stagesYAML
	replace := func(old, new string, n int) error {
		if c := strings.Count(out, old); c != n {
			return fmt.Errorf("kwokstages: stages.yaml has %q %d times, want %d", old, c, n)
		}
		out = strings.ReplaceAll(out, old, new)
		return nil
	}
	if o.GraceAll {
		if err := replace(graceKey, graceAllKey, graceUses); err != nil {
			return "", err
		}
	}
	if o.ZtunnelReady < 0 {
		return "", fmt.Errorf("kwokstages: negative ztunnel readiness delay %s", o.ZtunnelReady)
	}
	if o.ZtunnelReady > 0 {
		if err := replace(delayedKey, delayedZtKey, delayedUses); err != nil {
			return "", err
		}
		if err := replace(ztunnelMarker, fmt.Sprintf("durationMilliseconds: %d # ztunnel-ready", o.ZtunnelReady.Milliseconds()), 1); err != nil {
			return "", err
		}
	}
	return out, nil
}

// Timing modes (cluster.Options.Timing, E2E_TIMING).
const (
	ModeFast      = "fast"
	ModeRealistic = "realistic"
)

// DefaultZtunnelReady is the ztunnel readiness delay of the realistic mode.
const DefaultZtunnelReady = 3 * time.Second

// ParseTiming turns a mode ("", fast or realistic) and a ztunnel readiness delay (a Go duration,
// or "" for the mode's default: none when fast, DefaultZtunnelReady when realistic) into Options.
func ParseTiming(mode, ztunnelReady string) (Options, error) {
	var o Options
	switch mode {
	case "", ModeFast:
	case ModeRealistic:
		o.GraceAll, o.ZtunnelReady = true, DefaultZtunnelReady
	default:
		return o, fmt.Errorf("timing %q: want %s or %s", mode, ModeFast, ModeRealistic)
	}
	if ztunnelReady != "" {
		d, err := time.ParseDuration(ztunnelReady)
		if err != nil || d < 0 {
			return o, fmt.Errorf("ztunnel readiness delay %q: want a Go duration such as 3s", ztunnelReady)
		}
		o.ZtunnelReady = d
	}
	return o, nil
}
