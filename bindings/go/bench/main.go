// Command bench is the Go runner of `make bench` (scripts/bench/run.py): the shared
// workloads (BENCH_* variables) through this module and through a plain net/http client
// that speaks the protocol the way the official Go SDK does (net/http, bufio.Scanner +
// encoding/json per SSE line, multipart through io.Pipe), on the same server and
// sandbox; one JSON line per column. The official module itself does not resolve from
// the Go module proxy here, so this stand-in takes its column.
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
	"strconv"
	"strings"
	"time"

	opensandbox "example.invalid/opensandbox-sdk/go"
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

func p50(n, warm int, f func() error) (float64, error) {
	for i := 0; i < warm; i++ {
		if err := f(); err != nil {
			return 0, err
		}
	}
	var d []time.Duration
	for i := 0; i < n; i++ {
		t := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		d = append(d, time.Since(t))
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return float64(d[len(d)/2].Nanoseconds()) / 1e6, nil
}

func once(f func() error) (float64, error) {
	t := time.Now()
	err := f()
	return time.Since(t).Seconds(), err
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench failed:", err)
		os.Exit(1)
	}
}

func envInt(k string, d int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return v
	}
	return d
}

// result is one column of `make bench` (scripts/bench/run.py).
type result struct {
	Lang     string  `json:"lang"`
	Impl     string  `json:"impl"`
	FileInfo float64 `json:"file_info_p50_ms"`
	RunTrue  float64 `json:"run_true_p50_ms"`
	Stdout   float64 `json:"stdout_mb_s"`
	Upload   float64 `json:"upload_mb_s"`
	Download float64 `json:"download_mb_s"`
}

// client is what each column is measured through.
type client struct {
	fileInfo func() error
	run      func(cmd string, onStdout func(string)) error
	upload   func(path string, r io.Reader) error
	download func(path string) (int64, error)
}

func measure(impl string, c client) result {
	infoCalls := envInt("BENCH_INFO_CALLS", 200)
	runCalls := envInt("BENCH_RUN_CALLS", 50)
	stdoutCmd := os.Getenv("BENCH_STDOUT_CMD")
	stdoutBytes := int64(envInt("BENCH_STDOUT_BYTES", 0))
	uploadFile := os.Getenv("BENCH_UPLOAD_FILE")
	st, err := os.Stat(uploadFile)
	must(err)
	size := st.Size()
	r := result{Lang: "go", Impl: impl}

	r.FileInfo, err = p50(infoCalls, 20, c.fileInfo)
	must(err)
	r.RunTrue, err = p50(runCalls, 5, func() error { return c.run("true", func(string) {}) })
	must(err)

	var got int64
	s, err := once(func() error { return c.run(stdoutCmd, func(t string) { got += int64(len(t)) + 1 }) })
	must(err)
	if got != stdoutBytes {
		must(fmt.Errorf("%s: stdout got %d of %d bytes", impl, got, stdoutBytes))
	}
	r.Stdout = float64(stdoutBytes) / 1e6 / s

	dst := "/tmp/bench/" + impl + ".bin"
	s, err = once(func() error {
		f, err := os.Open(uploadFile)
		if err != nil {
			return err
		}
		defer f.Close()
		return c.upload(dst, f)
	})
	must(err)
	r.Upload = float64(size) / 1e6 / s

	s, err = once(func() error {
		n, err := c.download(dst)
		if err == nil && n != size {
			err = fmt.Errorf("%s: downloaded %d of %d bytes", impl, n, size)
		}
		return err
	})
	must(err)
	r.Download = float64(size) / 1e6 / s
	return r
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
	const probe = "/tmp/bench/small.txt"
	must(sb.UploadFile(ctx, strings.NewReader("x"), opensandbox.UploadFileOptions{Metadata: opensandbox.FileMetadata{Path: probe}}))

	ours := client{
		fileInfo: func() error { _, e := sb.GetFileInfo(ctx, probe); return e },
		run: func(cmd string, onStdout func(string)) error {
			var h *opensandbox.ExecutionHandlers
			if cmd != "true" {
				h = &opensandbox.ExecutionHandlers{SkipAccumulation: true, OnStdout: func(m opensandbox.OutputMessage) error {
					onStdout(m.Text)
					return nil
				}}
			}
			_, e := sb.RunCommand(ctx, cmd, h)
			return e
		},
		upload: func(path string, r io.Reader) error {
			return sb.UploadFile(ctx, r, opensandbox.UploadFileOptions{Metadata: opensandbox.FileMetadata{Path: path}})
		},
		download: func(path string) (int64, error) {
			rc, e := sb.DownloadFile(ctx, path, "")
			if e != nil {
				return 0, e
			}
			defer rc.Close()
			return io.Copy(io.Discard, rc)
		},
	}
	standIn := client{
		fileInfo: func() error { return ref.fileInfo(ctx, probe) },
		run:      func(cmd string, onStdout func(string)) error { return ref.run(ctx, cmd, onStdout) },
		upload:   func(path string, r io.Reader) error { return ref.upload(ctx, path, r) },
		download: func(path string) (int64, error) { return ref.download(ctx, path) },
	}
	for _, r := range []result{measure("stand-in", standIn), measure("ours", ours)} {
		b, err := json.Marshal(r)
		must(err)
		fmt.Println(string(b))
	}
}
