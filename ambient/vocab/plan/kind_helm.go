package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ChartRef says where a chart comes from. Exactly one of Repository, OCI and Path is set.
type ChartRef struct {
	// Name of the chart in the repository (base, istiod, cni, ztunnel, gateway).
	Name string `json:"name"`
	// Repository is a chart repository URL (https://istio-release.storage.googleapis.com/charts).
	Repository string `json:"repository,omitempty"`
	// OCI is an oci:// reference to the chart, without the version.
	OCI string `json:"oci,omitempty"`
	// Path is a local chart directory or .tgz.
	Path string `json:"path,omitempty"`
	// Version of the chart (the Istio version for released charts).
	Version string `json:"version"`
}

// Validate checks that exactly one source is set and that it has the right form.
func (c ChartRef) Validate() error {
	n := 0
	for _, s := range []string{c.Repository, c.OCI, c.Path} {
		if s != "" {
			n++
		}
	}
	switch {
	case c.Name == "":
		return errors.New("chart name is empty")
	case n != 1:
		return fmt.Errorf("chart %q: set exactly one of repository, oci and path (got %d)", c.Name, n)
	case c.Repository != "" && !strings.HasPrefix(c.Repository, "https://") && !strings.HasPrefix(c.Repository, "http://"):
		return fmt.Errorf("chart %q: repository %q is not an http(s) URL", c.Name, c.Repository)
	case c.OCI != "" && !strings.HasPrefix(c.OCI, "oci://"):
		return fmt.Errorf("chart %q: oci reference %q must start with oci://", c.Name, c.OCI)
	case c.Path == "" && c.Version == "":
		return fmt.Errorf("chart %q: version is empty", c.Name)
	}
	return nil
}

// HelmRelease is a Helm install or upgrade.
type HelmRelease struct {
	Release   string   `json:"release"`
	Namespace string   `json:"namespace"`
	Chart     ChartRef `json:"chart"`
	// Values are passed as given (helm --values). Only JSON types: string, bool, float64, []any, map[string]any.
	Values map[string]any `json:"values,omitempty"`
	// ReuseValues keeps the release's current user values under Values (helm --reuse-values).
	ReuseValues bool `json:"reuseValues,omitempty"`
	// PreviousRevision is the Helm revision to roll back to, for upgrades.
	PreviousRevision int `json:"previousRevision,omitempty"`
	// FromVersion is the chart version the release runs before an upgrade, when known, for the
	// reviewer; the executor does not read it.
	FromVersion string `json:"fromVersion,omitempty"`
	// Moved lists the values that fixed an image or version of another release, which the plan
	// moved to the chart's version (already in Values), for the reviewer: the runbook's "What
	// changes" names them. The executor does not read it.
	Moved []MovedValue `json:"moved,omitempty"`
}

// MovedValue is one Helm value the plan changed because it pinned another version than the chart's:
// a tag, an image, a proxy image.
type MovedValue struct {
	// Key is the value's path as helm --set writes it ("global.tag").
	Key  string `json:"key"`
	From string `json:"from"`
	To   string `json:"to"`
}

func validateHelmRelease(h *HelmRelease, where string, bad func(string, ...any)) {
	if h.Release == "" || h.Namespace == "" {
		bad("%s: helm release and namespace must be set", where)
	}
	if err := h.Chart.Validate(); err != nil {
		bad("%s: %v", where, err)
	}
}

// helmCommand renders helm install/upgrade with the chart's source, version and every value, so that
// the command, copied into a shell, sets exactly the plan's values (see SetFlags).
//
// It prints no --wait: readiness is what the step's printed checks wait for (kubectl wait, rollout
// status), as the executor, which asks Helm for no wait either, does. Helm's --wait also waits for
// every LoadBalancer Service to get an ingress address (helm.sh/helm/v3@v3.22.0 pkg/kube/ready.go,
// serviceReady), so on a cluster without a load-balancer controller a gateway's upgrade would time
// out and leave its release failed although the gateway runs.
func helmCommand(verb string, h *HelmRelease) string {
	c := fmt.Sprintf("helm %s %s %s -n %s", verb, h.Release, helmChartArgs(h.Chart), h.Namespace)
	if h.ReuseValues {
		c += " --reuse-values"
	}
	for _, f := range SetFlags(h.Values) {
		c += " " + f
	}
	return c
}

// helmChartArgs names a chart to helm: a local folder by its path, a repository chart by its name
// and --repo, an OCI chart by its reference, the last two with --version.
func helmChartArgs(c ChartRef) string {
	switch {
	case c.Repository != "":
		return c.Name + " --repo " + c.Repository + versionFlag(c.Version)
	case c.OCI != "":
		return strings.TrimSuffix(c.OCI, "/") + versionFlag(c.Version)
	}
	return shellWord(c.Path)
}

func versionFlag(v string) string {
	if v == "" {
		return ""
	}
	return " --version " + v
}

// SetFlags renders nested values as the helm flags that set exactly them, one flag per leaf, sorted
// by key, each quoted for a POSIX shell when it needs it. Helm's --set (helm.sh/helm/v3@v3.22.0:
// pkg/strvals/parser.go) splits on every unescaped comma, reads a backslash as an escape, and turns
// "true", "false", "null" and integers into other types, so:
//   - a string is written with --set, its commas and backslashes escaped (\, and \\), or with
//     --set-string when --set would read it as another type;
//   - a list, and a number that is not an integer, is written with --set-json, which keeps its type;
//   - a null (Helm's "drop the chart default") is written key=null, which --set reads as null;
//   - a key holding a dot (kubernetes.io/os, karpenter.sh/nodepool, annotations), '=', '[', ',' or a
//     backslash has them escaped, so that it stays one key of the path.
func SetFlags(values map[string]any) []string {
	return setFlags("", values)
}

func setFlags(prefix string, v map[string]any) []string {
	var out []string
	for _, k := range sortedKeys(v) {
		key := strvalsKey(k)
		if prefix != "" {
			key = prefix + "." + key
		}
		switch x := v[k].(type) {
		case nil:
			out = append(out, "--set "+shellWord(key+"=null"))
		case map[string]any:
			out = append(out, setFlags(key, x)...)
		case string:
			flag := "--set"
			if retyped(x) {
				flag = "--set-string"
			}
			out = append(out, flag+" "+shellWord(key+"="+strvalsEscape(x)))
		case bool:
			out = append(out, fmt.Sprintf("--set %s=%v", shellWord(key), x))
		case float64:
			if x == float64(int64(x)) {
				out = append(out, fmt.Sprintf("--set %s=%d", shellWord(key), int64(x)))
				continue
			}
			out = append(out, "--set-json "+shellWord(key+"="+jsonText(x)))
		default:
			out = append(out, "--set-json "+shellWord(key+"="+jsonText(x)))
		}
	}
	return out
}

// retyped reports whether --set would read the string as something else: a bool, null, or an
// integer (helm.sh/helm/v3@v3.22.0: pkg/strvals/parser.go, typedVal).
func retyped(s string) bool {
	switch strings.ToLower(s) {
	case "true", "false", "null", "0":
		return true
	}
	if s == "" || s[0] == '0' {
		return false
	}
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

// strvalsKey escapes the characters --set reads specially inside one key of a path: the dots that
// separate keys, '=', '[' and ',', and the backslash itself (helm.sh/helm/v3@v3.22.0:
// pkg/strvals/parser.go, key and runesUntil: a backslash makes the next character part of the
// key). So nodeSelector."kubernetes.io/os" is written nodeSelector.kubernetes\.io/os, which sets
// the one key kubernetes.io/os, not kubernetes → io/os.
func strvalsKey(k string) string {
	return strings.NewReplacer(`\`, `\\`, ".", `\.`, "=", `\=`, "[", `\[`, ",", `\,`).Replace(k)
}

// strvalsEscape escapes the characters --set reads specially inside a value.
func strvalsEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, ",", `\,`).Replace(s)
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil { // plan values are JSON data (NormalizeValues); this cannot happen
		return "null"
	}
	return string(b)
}

// shellWord quotes s for a POSIX shell unless it is made only of characters no shell treats
// specially (braces are quoted too: bash expands "{a,b}").
func shellWord(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./:=@%+-", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
