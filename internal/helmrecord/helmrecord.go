// Package helmrecord reads and writes the part of Helm's release record (helm.sh/helm/v3
// pkg/release.Release) the project needs, in Helm's storage encoding: base64 of gzipped JSON
// (pkg/storage/driver/util.go, encodeRelease and decodeRelease). observe reads it from release
// Secrets, executetest's fake Helm writes and reads it, and the e2e corpus prunes dumps to it.
package helmrecord

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxJSON bounds the decompressed size of one release, against corrupt or hostile data.
const MaxJSON = 64 << 20

// Record is the part of a Helm release record the project reads.
type Record struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Version   int    `json:"version"`
	Info      struct {
		Status string `json:"status"`
	} `json:"info"`
	Chart struct {
		Metadata struct {
			Name       string `json:"name"`
			Version    string `json:"version"`
			AppVersion string `json:"appVersion"`
		} `json:"metadata"`
	} `json:"chart"`
	Config map[string]any `json:"config,omitempty"`
}

// Decode reads a release Secret's data.release: base64 of (usually gzipped) JSON. Its errors never
// quote the data, which holds the release's values.
func Decode(data []byte) (*Record, error) {
	raw, err := base64.StdEncoding.DecodeString(string(data))
	if err != nil {
		return nil, fmt.Errorf("data.release is not base64: %w", err)
	}
	if bytes.HasPrefix(raw, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("data.release is not valid gzip: %w", err)
		}
		raw, err = io.ReadAll(io.LimitReader(zr, MaxJSON+1))
		if err != nil {
			return nil, fmt.Errorf("data.release is not valid gzip: %w", err)
		}
		if len(raw) > MaxJSON {
			return nil, fmt.Errorf("data.release decompresses to more than %d bytes", MaxJSON)
		}
	}
	var r Record
	if err := json.Unmarshal(raw, &r); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return nil, fmt.Errorf("data.release is not a Helm release record: not JSON (syntax error at byte %d)", syn.Offset)
		case errors.As(err, &typ):
			return nil, fmt.Errorf("data.release is not a Helm release record: field %s is a JSON %s, want %s", typ.Field, typ.Value, typ.Type)
		default:
			return nil, errors.New("data.release is not a Helm release record")
		}
	}
	return &r, nil
}

// Encode writes r as Helm stores it: base64 of JSON gzipped at level (gzip.DefaultCompression, as
// Helm does, or gzip.BestCompression for files kept in the repository).
func Encode(r *Record, level int) ([]byte, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, level)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return []byte(base64.StdEncoding.EncodeToString(buf.Bytes())), nil
}
