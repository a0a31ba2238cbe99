//go:build e2e

// Command floor is the LIST floor of the scale bench (hack/scale-bench.sh): the least any tool that
// reads what ambientkit's observer reads must pay. It makes exactly the LIST requests the observer
// made in an earlier run (the first page of each, from the observer's JSON result: same paths, label
// and field selectors, page size and Accept header), follows their continue tokens, reads every body
// to the end and decodes nothing but the list metadata (for the continue token). No objects are
// decoded and nothing is kept, so its wall time, CPU and memory are what the API server, the
// transport and TLS cost; the observer's distance from it is what decoding and summarising cost.
//
//	floor -kubeconfig K -requests ours.json [-out floor.json] [-parallel 1]
//
// -parallel N runs up to N of the independent LISTs at once (each LIST's pages stay sequential), as
// a floor for an observer that overlaps kinds; the default runs them one after the other.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// UserAgent of the floor's requests.
const UserAgent = "ambientkit-scalebench-floor"

// Request is one LIST the observer made (observer.Result.Lists).
type Request struct {
	Path   string `json:"path"`
	Query  string `json:"query"`
	Accept string `json:"accept"`
}

// Result is written to -out.
type Result struct {
	WallSeconds float64 `json:"wallSeconds"`
	Lists       int     `json:"lists"`
	Requests    int     `json:"requests"`
	Bytes       int64   `json:"bytes"`
	VmHWMKiB    int64   `json:"vmHWMKiB"`
	Error       string  `json:"error,omitempty"`
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	requests := flag.String("requests", "", "the observer's JSON result, whose lists field names the LISTs to make")
	out := flag.String("out", "", "write the result as JSON here (default stdout)")
	parallel := flag.Int("parallel", 1, "independent LISTs in flight at once")
	flag.Parse()
	res, err := run(*kubeconfig, *requests, *parallel)
	if err != nil {
		res.Error = err.Error()
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	if *out == "" {
		fmt.Println(string(b))
	} else if werr := os.WriteFile(*out, b, 0o644); werr != nil {
		fmt.Fprintln(os.Stderr, "floor:", werr)
		os.Exit(1)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, requestsFile string, parallel int) (*Result, error) {
	t0 := time.Now()
	res := &Result{}
	defer func() {
		res.WallSeconds = time.Since(t0).Seconds()
		res.VmHWMKiB = vmHWM()
	}()
	b, err := os.ReadFile(requestsFile)
	if err != nil {
		return res, err
	}
	var ours struct {
		Lists []Request `json:"lists"`
	}
	if err := json.Unmarshal(b, &ours); err != nil {
		return res, fmt.Errorf("%s: %w", requestsFile, err)
	}
	if len(ours.Lists) == 0 {
		return res, fmt.Errorf("%s names no LIST requests", requestsFile)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return res, err
	}
	rc.UserAgent = UserAgent
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return res, err
	}
	base, err := url.Parse(rc.Host)
	if err != nil {
		return res, err
	}
	ctx := context.Background()
	if parallel < 1 {
		parallel = 1
	}
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for _, r := range ours.Lists {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			n, bytes, err := list(ctx, hc, base, r)
			mu.Lock()
			defer mu.Unlock()
			res.Lists++
			res.Requests += n
			res.Bytes += bytes
			if err != nil && first == nil {
				first = err
			}
		}()
	}
	wg.Wait()
	return res, first
}

// list makes one paged LIST and returns the requests made and the bytes read.
func list(ctx context.Context, hc *http.Client, base *url.URL, r Request) (requests int, n int64, err error) {
	q, err := url.ParseQuery(r.Query)
	if err != nil {
		return 0, 0, err
	}
	q.Del("continue")
	var buf bytes.Buffer
	for {
		u := *base
		u.Path = strings.TrimSuffix(u.Path, "/") + r.Path
		u.RawQuery = q.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return requests, n, err
		}
		if r.Accept != "" {
			req.Header.Set("Accept", r.Accept)
		}
		requests++
		resp, err := hc.Do(req)
		if err != nil {
			return requests, n, err
		}
		buf.Reset()
		m, err := io.Copy(&buf, resp.Body)
		resp.Body.Close()
		n += m
		if err != nil {
			return requests, n, err
		}
		if resp.StatusCode == http.StatusNotFound {
			return requests, n, nil // a kind the server does not serve: the observer skipped it too
		}
		if resp.StatusCode != http.StatusOK {
			return requests, n, fmt.Errorf("GET %s: %s: %.200s", u.Path, resp.Status, buf.String())
		}
		cont, err := continueOf(resp.Header.Get("Content-Type"), buf.Bytes())
		if err != nil {
			return requests, n, fmt.Errorf("GET %s: %w", u.Path, err)
		}
		if cont == "" {
			return requests, n, nil
		}
		q.Set("continue", cont)
	}
}

// protobufMagic starts every Kubernetes protobuf body.
var protobufMagic = []byte("k8s\x00")

// continueOf reads the list's continue token and nothing else of the body.
func continueOf(contentType string, body []byte) (string, error) {
	if strings.HasPrefix(contentType, "application/vnd.kubernetes.protobuf") {
		if !bytes.HasPrefix(body, protobufMagic) {
			return "", errors.New("protobuf body without the k8s magic")
		}
		var u runtime.Unknown
		if err := u.Unmarshal(body[len(protobufMagic):]); err != nil {
			return "", err
		}
		// The list's field 1 is its ListMeta; the items follow and are skipped unread.
		raw := u.Raw
		for len(raw) > 0 {
			num, typ, n := protowire.ConsumeTag(raw)
			if n < 0 {
				return "", protowire.ParseError(n)
			}
			raw = raw[n:]
			if num == 1 && typ == protowire.BytesType {
				v, n := protowire.ConsumeBytes(raw)
				if n < 0 {
					return "", protowire.ParseError(n)
				}
				var lm metav1.ListMeta
				if err := lm.Unmarshal(v); err != nil {
					return "", err
				}
				return lm.Continue, nil
			}
			n = protowire.ConsumeFieldValue(num, typ, raw)
			if n < 0 {
				return "", protowire.ParseError(n)
			}
			raw = raw[n:]
		}
		return "", nil
	}
	var l struct {
		Metadata struct {
			Continue string `json:"continue"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &l); err != nil {
		return "", err
	}
	return l.Metadata.Continue, nil
}

// vmHWM is this process's peak resident set size in KiB (/proc/self/status), -1 when unreadable.
func vmHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			var v int64
			if _, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:")), "%d", &v); err == nil {
				return v
			}
		}
	}
	return -1
}
