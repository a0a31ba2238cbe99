//go:build e2e

// Command floor is the LIST floor of the scale bench (hack/scale-bench.sh): the least any tool that
// reads what ambientkit's observer reads must pay. It makes the requests the observer made in an
// earlier run (the first request of each kind, from the observer's JSON result: same paths, label
// and field selectors and Accept header), follows continue tokens, reads every body to the end and
// decodes nothing but the list metadata (for the continue token). No objects are decoded and
// nothing is kept, so its wall time, CPU and memory are what the API server, the transport and TLS
// cost; the observer's distance from it is what decoding and summarising cost.
//
//	floor -kubeconfig K -requests ours.json [-mode list|same] [-out floor.json] [-parallel 1]
//
// -mode list (the default) makes paged LISTs: a watch-list the observer made becomes a LIST in pages
// of -page-size (Secrets: 50, as the observer pages them). -mode same makes exactly the observer's
// requests: its watch-lists are read frame by frame until the bookmark that ends the initial list.
// -parallel N runs up to N of the kinds at once (each kind's pages stay sequential); the default
// runs them one after the other.
package main

import (
	"bufio"
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
	mode := flag.String("mode", "list", "list: paged LISTs; same: exactly the observer's requests")
	pageSize := flag.Int("page-size", 500, "page size of the LISTs that stand for the observer's watch-lists (-mode list)")
	flag.Parse()
	if *mode != "list" && *mode != "same" {
		fmt.Fprintf(os.Stderr, "floor: -mode %q: want list or same\n", *mode)
		os.Exit(2)
	}
	res, err := run(*kubeconfig, *requests, *parallel, *mode == "list", *pageSize)
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

func run(kubeconfig, requestsFile string, parallel int, asLists bool, pageSize int) (*Result, error) {
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
			n, bytes, err := request(ctx, hc, base, r, asLists, pageSize)
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

// watchParams are the query parameters of a watch-list.
var watchParams = []string{"watch", "sendInitialEvents", "resourceVersionMatch", "resourceVersion", "allowWatchBookmarks", "timeoutSeconds"}

// request makes one of the observer's requests, as it was or (asLists) as a paged LIST, and returns
// the requests made and the bytes read.
func request(ctx context.Context, hc *http.Client, base *url.URL, r Request, asLists bool, pageSize int) (requests int, n int64, err error) {
	q, err := url.ParseQuery(r.Query)
	if err != nil {
		return 0, 0, err
	}
	q.Del("continue")
	if w := q.Get("watch"); w == "true" || w == "1" {
		if !asLists {
			return watchList(ctx, hc, base, r, q)
		}
		for _, p := range watchParams {
			q.Del(p)
		}
		limit := pageSize
		if strings.HasSuffix(r.Path, "/secrets") {
			limit = 50 // as the observer pages Helm's records
		}
		q.Set("limit", fmt.Sprint(limit))
		r.Accept = strings.ReplaceAll(r.Accept, ";stream=watch", "")
		// A metadata-only watch asks for PartialObjectMetadata; a LIST for the list of them.
		r.Accept = strings.ReplaceAll(r.Accept, "as=PartialObjectMetadata;", "as=PartialObjectMetadataList;")
	}
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

// watchList reads a watch-list's stream until the bookmark that ends the initial list, decoding
// each event's envelope but not its object (but for bookmarks' metadata).
func watchList(ctx context.Context, hc *http.Client, base *url.URL, r Request, q url.Values) (requests int, n int64, err error) {
	u := *base
	u.Path = strings.TrimSuffix(u.Path, "/") + r.Path
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, 0, err
	}
	if r.Accept != "" {
		req.Header.Set("Accept", r.Accept)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 1, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return 1, 0, nil
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return 1, 0, fmt.Errorf("GET %s: %s: %s", u.Path, resp.Status, b)
	}
	cr := &countingReader{r: bufio.NewReaderSize(resp.Body, 1<<16)}
	protobuf := strings.HasPrefix(resp.Header.Get("Content-Type"), "application/vnd.kubernetes.protobuf")
	dec := json.NewDecoder(cr)
	var frame []byte
	for {
		var typ string
		var obj []byte
		if protobuf {
			// Frames: a 4-byte big-endian length, then runtime.Unknown holding a metav1.WatchEvent.
			var l [4]byte
			if _, err := io.ReadFull(cr, l[:]); err != nil {
				return 1, cr.n, fmt.Errorf("GET %s: the stream ended before the initial list did: %w", u.Path, err)
			}
			size := int(l[0])<<24 | int(l[1])<<16 | int(l[2])<<8 | int(l[3])
			if cap(frame) < size {
				frame = make([]byte, size)
			}
			frame = frame[:size]
			if _, err := io.ReadFull(cr, frame); err != nil {
				return 1, cr.n, err
			}
			var ev metav1.WatchEvent
			if err := ev.Unmarshal(frame); err != nil {
				var unk runtime.Unknown
				if uerr := unk.Unmarshal(bytes.TrimPrefix(frame, protobufMagic)); uerr != nil {
					return 1, cr.n, fmt.Errorf("GET %s: a watch frame: %w", u.Path, err)
				}
				if err := ev.Unmarshal(unk.Raw); err != nil {
					return 1, cr.n, fmt.Errorf("GET %s: a watch frame: %w", u.Path, err)
				}
			}
			typ, obj = ev.Type, ev.Object.Raw
		} else {
			var ev struct {
				Type   string          `json:"type"`
				Object json.RawMessage `json:"object"`
			}
			if err := dec.Decode(&ev); err != nil {
				return 1, cr.n, fmt.Errorf("GET %s: the stream ended before the initial list did: %w", u.Path, err)
			}
			typ, obj = ev.Type, ev.Object
		}
		switch typ {
		case "ERROR":
			return 1, cr.n, fmt.Errorf("GET %s: an ERROR event", u.Path)
		case "BOOKMARK":
			end, err := initialEventsEnd(protobuf, obj)
			if err != nil {
				return 1, cr.n, fmt.Errorf("GET %s: a bookmark: %w", u.Path, err)
			}
			if end {
				return 1, cr.n, nil
			}
		}
	}
}

// initialEventsEnd reads a bookmark's object far enough to see the initial-events-end annotation.
func initialEventsEnd(protobuf bool, obj []byte) (bool, error) {
	if !protobuf {
		var o struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := json.Unmarshal(obj, &o); err != nil {
			return false, err
		}
		return o.Metadata.Annotations[metav1.InitialEventsAnnotationKey] == "true", nil
	}
	var u runtime.Unknown
	if err := u.Unmarshal(bytes.TrimPrefix(obj, protobufMagic)); err != nil {
		return false, err
	}
	// Every built-in object's field 1 is its ObjectMeta.
	raw := u.Raw
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 {
			return false, protowire.ParseError(n)
		}
		raw = raw[n:]
		if num == 1 && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(raw)
			if n < 0 {
				return false, protowire.ParseError(n)
			}
			var om metav1.ObjectMeta
			if err := om.Unmarshal(v); err != nil {
				return false, err
			}
			return om.Annotations[metav1.InitialEventsAnnotationKey] == "true", nil
		}
		n = protowire.ConsumeFieldValue(num, typ, raw)
		if n < 0 {
			return false, protowire.ParseError(n)
		}
		raw = raw[n:]
	}
	return false, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
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
