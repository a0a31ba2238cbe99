package steps

import (
	"strings"
	"testing"

	"github.com/ambientkit/ambientkit/ambient/vocab/mesh"
)

func TestChartSourceRef(t *testing.T) {
	c := ChartSource{Paths: map[string]string{"ztunnel": "/charts/1.31.5/ztunnel", "ztunnel@1.31.4": "/charts/1.31.4/ztunnel"}}
	for _, tc := range []struct {
		name, chart, version, want string
	}{
		{"a version with its own folder is taken from it", "ztunnel", "1.31.4", "/charts/1.31.4/ztunnel"},
		{"another version falls back to the chart's folder", "ztunnel", "1.31.5", "/charts/1.31.5/ztunnel"},
		{"a chart without a path comes from the default repository", "istiod", "1.31.4", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.Ref(tc.chart, mesh.MustParseVersion(tc.version))
			if r.Path != tc.want || r.Version != tc.version {
				t.Errorf("Ref = %+v, want path %q at %s", r, tc.want, tc.version)
			}
			if tc.want == "" && r.Repository != DefaultChartRepository {
				t.Errorf("Ref = %+v, want the default repository", r)
			}
		})
	}
}

func TestChartSourceRefusesAPathKeyThatIsNotAChartOrAVersion(t *testing.T) {
	for _, key := range []string{"ztunnel@latest", "@1.31.4"} {
		err := ChartSource{Paths: map[string]string{key: "/charts/x"}}.Validate()
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("key %q: err = %v, want it refused by name", key, err)
		}
	}
	if err := (ChartSource{Paths: map[string]string{"ztunnel@1.31.4": "/charts/x"}}).Validate(); err != nil {
		t.Errorf("a chart@version key: %v", err)
	}
}
