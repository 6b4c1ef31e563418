// s3-counter: a reverse proxy on loopback in front of an S3 endpoint that counts every request by
// kind (PUT, multipart part, GET, ranged GET, HEAD, LIST, DELETE, ...) and the bytes each kind
// moved in and out. icebench points every client of a run (writers, the REST catalog, the oracle)
// at it and reads the counters before and after each phase: what a write costs the object store,
// counted the same way for any S3 server behind it.
//
// Requests pass unchanged: the Host header is kept (SigV4 signs it), bodies stream both ways, and
// nothing is added. Path-style addressing only (icebench's clients all use it). GET /_counters
// answers the counters as JSON (no bucket can be named `_counters`: bucket names have no '_').
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

const countersPath = "/_counters"

// tally is one kind's requests and the bytes of their bodies, in (to the store) and out.
type tally struct {
	Requests atomic.Int64 `json:"-"`
	BytesIn  atomic.Int64 `json:"-"`
	BytesOut atomic.Int64 `json:"-"`
}

type counters struct {
	mu    sync.Mutex
	kinds map[string]*tally
}

func (c *counters) of(kind string) *tally {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.kinds[kind]
	if !ok {
		t = &tally{}
		c.kinds[kind] = t
	}
	return t
}

func (c *counters) snapshot() map[string]map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]map[string]int64, len(c.kinds))
	for kind, t := range c.kinds {
		out[kind] = map[string]int64{
			"requests":  t.Requests.Load(),
			"bytes_in":  t.BytesIn.Load(),
			"bytes_out": t.BytesOut.Load(),
		}
	}
	return out
}

// kind names what a path-style S3 request does.
func kind(r *http.Request) string {
	query := r.URL.Query()
	path := strings.Trim(r.URL.Path, "/")
	object := strings.Contains(path, "/") // bucket/key, not a bucket or the service
	switch r.Method {
	case http.MethodHead:
		if object {
			return "head"
		}
		return "head_bucket"
	case http.MethodGet:
		switch {
		case !object || query.Has("uploadId"):
			return "list"
		case r.Header.Get("Range") != "":
			return "get_range"
		}
		return "get"
	case http.MethodPut:
		switch {
		case query.Has("partNumber"):
			return "upload_part"
		case r.Header.Get("X-Amz-Copy-Source") != "":
			return "copy"
		case !object:
			return "create_bucket"
		}
		return "put"
	case http.MethodPost:
		switch {
		case query.Has("uploads"):
			return "multipart_start"
		case query.Has("uploadId"):
			return "multipart_complete"
		case query.Has("delete"):
			return "delete_objects"
		}
		return "post"
	case http.MethodDelete:
		if query.Has("uploadId") {
			return "multipart_abort"
		}
		return "delete"
	}
	return strings.ToLower(r.Method)
}

// countingBody adds what is read through it to a counter.
type countingBody struct {
	io.ReadCloser
	count *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.count.Add(int64(n))
	return n, err
}

type kindKey struct{}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on (loopback)")
	target := flag.String("target", "", "the S3 endpoint to forward to, e.g. http://127.0.0.1:8333")
	flag.Parse()
	upstream, err := url.Parse(*target)
	if err != nil || upstream.Host == "" {
		fmt.Fprintf(os.Stderr, "s3-counter: -target must be a URL like http://127.0.0.1:8333, got %q\n", *target)
		os.Exit(2)
	}
	seen := &counters{kinds: map[string]*tally{}}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			r.Out.URL.Path, r.Out.URL.RawPath = r.In.URL.Path, r.In.URL.RawPath // exactly as signed
			r.Out.Host = r.In.Host                                              // SigV4 signs the Host header
		},
		Transport: &http.Transport{
			Proxy:               nil,
			DisableCompression:  true,
			MaxIdleConnsPerHost: 64,
		},
		ModifyResponse: func(response *http.Response) error {
			t := seen.of(response.Request.Context().Value(kindKey{}).(string))
			response.Body = countingBody{response.Body, &t.BytesOut}
			return nil
		},
		ErrorLog: log.New(os.Stderr, "s3-counter: ", log.LstdFlags),
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == countersPath && r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(seen.snapshot())
			return
		}
		name := kind(r)
		t := seen.of(name)
		t.Requests.Add(1)
		if r.Body != nil {
			r.Body = countingBody{r.Body, &t.BytesIn}
		}
		proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), kindKey{}, name)))
	})
	listener, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "s3-counter: cannot listen on %s: %v\n", *listen, err)
		os.Exit(2)
	}
	fmt.Printf("s3-counter on %s, forwarding to %s\n", listener.Addr(), upstream)
	log.Fatal(http.Serve(listener, handler))
}
