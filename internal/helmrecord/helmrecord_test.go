package helmrecord

import (
	"compress/gzip"
	"encoding/base64"
	"strings"
	"testing"
)

func TestARecordEncodedAsHelmStoresItDecodesToTheSameFields(t *testing.T) {
	var r Record
	r.Name, r.Namespace, r.Version, r.Info.Status = "istiod", "istio-system", 3, "deployed"
	r.Chart.Metadata.Name, r.Chart.Metadata.Version, r.Chart.Metadata.AppVersion = "istiod", "1.30.3", "1.30.3"
	r.Config = map[string]any{"revision": "1-30-3"}
	for _, level := range []int{gzip.DefaultCompression, gzip.BestCompression} {
		data, err := Encode(&r, level)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != r.Name || got.Version != 3 || got.Info.Status != "deployed" || got.Chart.Metadata.Version != "1.30.3" || got.Config["revision"] != "1-30-3" {
			t.Errorf("level %d: decoded %+v, want %+v", level, got, r)
		}
	}
}

func TestDataThatIsNoReleaseIsRefusedWithoutQuotingIt(t *testing.T) {
	for _, tc := range []struct{ name, data, says string }{
		{"not base64", "%%%", "not base64"},
		{"not JSON", base64.StdEncoding.EncodeToString([]byte("secret-value{")), "not JSON"},
		{"a field of the wrong type", base64.StdEncoding.EncodeToString([]byte(`{"version":"three"}`)), "field version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "secret-value") {
				t.Errorf("Decode(%s) = %v; want an error saying %q that does not quote the data", tc.name, err, tc.says)
			}
		})
	}
}
