// Command bench compares this module against a plain net/http client that speaks the
// protocol the way the official Go SDK does (net/http, bufio.Scanner + encoding/json
// per SSE line, multipart through io.Pipe), on the same server and sandbox. The
// official module itself does not resolve from the Go module proxy, so this stand-in
// is the baseline. Run by `make bench-go` through scripts/with-server.sh.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	opensandbox "example.invalid/opensandbox-sdk/go"
)

const (
	stdoutMB   = 100
	transferMB = 256
)

type baseline struct {
	base    string
	headers map[string]string
	client  *http.Client
}

func (b *baseline) req(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	r, err := http.NewRequestWithContext(ctx, method, b.base+path, body)
	if err != nil {
		return nil, err
	}
	for k, v := range b.headers {
		r.Header.Set(k, v)
	}
	resp, err := b.client.Do(r)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 400 {
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %d", method, path, resp.StatusCode)
	}
	return resp, nil
}

func (b *baseline) fileInfo(ctx context.Context, path string) error {
	resp, err := b.req(ctx, http.MethodGet, "/files/info?path="+url.QueryEscape(path), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var out map[string]map[string]any
	return json.NewDecoder(resp.Body).Decode(&out)
}

// run streams POST /command and calls onStdout per stdout line, as the official SDK.
func (b *baseline) run(ctx context.Context, cmd string, onStdout func(string)) error {
	body, _ := json.Marshal(map[string]any{"command": cmd})
	resp, err := b.req(ctx, http.MethodPost, "/command", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		line = strings.TrimPrefix(line, "data:")
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var ev struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return err
		}
		switch ev.Type {
		case "stdout":
			onStdout(ev.Text)
		case "execution_complete", "error":
			return nil
		}
	}
	return sc.Err()
}

func (b *baseline) upload(ctx context.Context, path string, r io.Reader) error {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		h := make(textproto.MIMEHeader)
		h.Set("Content-Disposition", `form-data; name="metadata"; filename="metadata"`)
		h.Set("Content-Type", "application/json")
		part, _ := mw.CreatePart(h)
		meta, _ := json.Marshal(map[string]any{"path": path, "mode": 644})
		part.Write(meta)
		fp, _ := mw.CreateFormFile("file", "file")
		if _, err := io.Copy(fp, r); err != nil {
			pw.CloseWithError(err)
			return
		}
		pw.CloseWithError(mw.Close())
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.base+"/files/upload", pr)
	if err != nil {
		return err
	}
	for k, v := range b.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := b.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode >= 400 {
		return fmt.Errorf("upload: %d", resp.StatusCode)
	}
	return nil
}

func (b *baseline) download(ctx context.Context, path string) (int64, error) {
	resp, err := b.req(ctx, http.MethodGet, "/files/download?path="+url.QueryEscape(path), nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return io.Copy(io.Discard, resp.Body)
}

// zeroReader yields n bytes without holding them.
type zeroReader struct{ left int64 }

func (z *zeroReader) Read(p []byte) (int, error) {
	if z.left <= 0 {
		return 0, io.EOF
	}
	n := int64(len(p))
	if n > z.left {
		n = z.left
	}
	for i := range p[:n] {
		p[i] = 'x'
	}
	z.left -= n
	return int(n), nil
}

func p50(n int, f func() error) (time.Duration, error) {
	var d []time.Duration
	for i := 0; i < n; i++ {
		t := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		d = append(d, time.Since(t))
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2], nil
}

func once(f func() error) (time.Duration, error) {
	t := time.Now()
	err := f()
	return time.Since(t), err
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench failed:", err)
		os.Exit(1)
	}
}

type row struct {
	name      string
	ours, ref time.Duration
	mb        float64
}

func main() {
	ctx := context.Background()
	cfg := opensandbox.ConnectionConfig{}
	sb, err := opensandbox.CreateSandbox(ctx, cfg, opensandbox.SandboxCreateOptions{Image: "ubuntu:22.04"})
	must(err)
	defer sb.Kill(ctx)
	ep, err := sb.GetEndpoint(ctx, opensandbox.DefaultExecdPort)
	must(err)
	base := ep.Endpoint
	if !strings.HasPrefix(base, "http") {
		base = cfg.GetProtocol() + "://" + base
	}
	hdr := map[string]string{"OPEN-SANDBOX-API-KEY": cfg.GetAPIKey()}
	for k, v := range ep.Headers {
		hdr[k] = v
	}
	ref := &baseline{base: strings.TrimRight(base, "/"), headers: hdr, client: &http.Client{}}
	must(sb.UploadFile(ctx, strings.NewReader("x"), opensandbox.UploadFileOptions{Metadata: opensandbox.FileMetadata{Path: "/tmp/bench/probe"}}))

	var rows []row
	// Warm both connection pools.
	for i := 0; i < 20; i++ {
		_, _ = sb.GetFileInfo(ctx, "/tmp/bench/probe")
		_ = ref.fileInfo(ctx, "/tmp/bench/probe")
	}
	o, err := p50(300, func() error { _, e := sb.GetFileInfo(ctx, "/tmp/bench/probe"); return e })
	must(err)
	r, err := p50(300, func() error { return ref.fileInfo(ctx, "/tmp/bench/probe") })
	must(err)
	rows = append(rows, row{name: "get_file_info round trip p50", ours: o, ref: r})

	o, err = p50(60, func() error { _, e := sb.RunCommand(ctx, "true", nil); return e })
	must(err)
	r, err = p50(60, func() error { return ref.run(ctx, "true", func(string) {}) })
	must(err)
	rows = append(rows, row{name: `run("true") p50`, ours: o, ref: r})

	gen := fmt.Sprintf("head -c %d /dev/zero | tr '\\0' 'a' | fold -w 99", stdoutMB*1000*1000/100*99)
	var got int64
	h := &opensandbox.ExecutionHandlers{SkipAccumulation: true, OnStdout: func(m opensandbox.OutputMessage) error {
		got += int64(len(m.Text)) + 1
		return nil
	}}
	o, err = once(func() error { _, e := sb.RunCommand(ctx, gen, h); return e })
	must(err)
	oursBytes := got
	got = 0
	r, err = once(func() error { return ref.run(ctx, gen, func(s string) { got += int64(len(s)) + 1 }) })
	must(err)
	if got != oursBytes {
		must(fmt.Errorf("stdout sizes differ: ours %d, baseline %d", oursBytes, got))
	}
	rows = append(rows, row{name: fmt.Sprintf("%d MB stdout into a handler", stdoutMB), ours: o, ref: r, mb: float64(got) / 1e6})

	size := int64(transferMB) << 20
	o, err = once(func() error {
		return sb.UploadFile(ctx, &zeroReader{left: size}, opensandbox.UploadFileOptions{Metadata: opensandbox.FileMetadata{Path: "/tmp/bench/ours.bin"}})
	})
	must(err)
	r, err = once(func() error { return ref.upload(ctx, "/tmp/bench/ref.bin", &zeroReader{left: size}) })
	must(err)
	rows = append(rows, row{name: fmt.Sprintf("%d MB upload", transferMB), ours: o, ref: r, mb: float64(size) / (1 << 20)})

	o, err = once(func() error {
		rc, e := sb.DownloadFile(ctx, "/tmp/bench/ours.bin", "")
		if e != nil {
			return e
		}
		defer rc.Close()
		n, e := io.Copy(io.Discard, rc)
		if e == nil && n != size {
			e = fmt.Errorf("downloaded %d bytes", n)
		}
		return e
	})
	must(err)
	r, err = once(func() error {
		n, e := ref.download(ctx, "/tmp/bench/ours.bin")
		if e == nil && n != size {
			e = fmt.Errorf("downloaded %d bytes", n)
		}
		return e
	})
	must(err)
	rows = append(rows, row{name: fmt.Sprintf("%d MB download", transferMB), ours: o, ref: r, mb: float64(size) / (1 << 20)})

	fmt.Println("Go SDK benchmark: ours (cgo over the Rust core) vs a net/http client written the official SDK's way")
	fmt.Printf("%-32s %14s %14s %8s\n", "operation", "ours", "baseline", "ratio")
	slower := 0
	for _, x := range rows {
		ratio := float64(x.ours) / float64(x.ref)
		extra := ""
		if x.mb > 0 {
			extra = fmt.Sprintf("   (%.0f vs %.0f MB/s)", x.mb/x.ours.Seconds(), x.mb/x.ref.Seconds())
		}
		fmt.Printf("%-32s %14s %14s %7.2fx%s\n", x.name, x.ours.Round(time.Microsecond), x.ref.Round(time.Microsecond), ratio, extra)
		if ratio > 1.0 {
			slower++
		}
	}
	fmt.Printf("ratio = ours / baseline (below 1 = ours faster); rows where ours is slower: %d\n", slower)
}
