package opensandbox

/*
#include <stdlib.h>
#include "opensandbox.h"
*/
import "C"

import (
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"
	"unsafe"
)

// uploadChunk is the size of the pieces an upload reader is copied in.
const uploadChunk = 1 << 20

// UploadFileOptions is the destination (Metadata.Path, required) of an upload.
type UploadFileOptions struct {
	FileName string
	Metadata FileMetadata
}

// UploadFileEntry is one file of UploadFiles.
type UploadFileEntry struct {
	File    io.Reader
	Options UploadFileOptions
}

// DownloadFileOptions selects lines (1-based Offset, Limit) of a download.
type DownloadFileOptions struct {
	Offset int
	Limit  int
}

// GetFileInfo returns the metadata of path, keyed by path.
func (s *Sandbox) GetFileInfo(ctx context.Context, path string) (map[string]FileInfo, error) {
	out := map[string]FileInfo{}
	if err := s.op(ctx, "files.get_file_info", map[string]any{"paths": []string{path}}, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteFiles deletes files.
func (s *Sandbox) DeleteFiles(ctx context.Context, paths []string) error {
	return s.op(ctx, "files.delete_files", map[string]any{"paths": paths}, nil)
}

// MoveFiles renames or moves files.
func (s *Sandbox) MoveFiles(ctx context.Context, req MoveRequest) error {
	return s.op(ctx, "files.move_files", map[string]any{"entries": req}, nil)
}

// SearchFiles finds files under dir matching a glob pattern ("" = all).
func (s *Sandbox) SearchFiles(ctx context.Context, dir, pattern string) ([]FileInfo, error) {
	args := map[string]any{"path": dir}
	if pattern != "" {
		args["pattern"] = pattern
	}
	var out []FileInfo
	if err := s.op(ctx, "files.search", args, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// ListDirectory lists the immediate children of path.
func (s *Sandbox) ListDirectory(ctx context.Context, path string) ([]FileInfo, error) {
	var out []FileInfo
	if err := s.op(ctx, "files.list_directory", map[string]any{"path": path}, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// ListDirectoryWithDepth lists path up to depth levels.
func (s *Sandbox) ListDirectoryWithDepth(ctx context.Context, path string, depth int) ([]FileInfo, error) {
	if depth < 0 {
		return nil, &InvalidArgumentError{Field: "depth", Message: "depth must not be negative"}
	}
	var out []FileInfo
	if err := s.op(ctx, "files.list_directory", map[string]any{"path": path, "depth": depth}, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// SetPermissions changes mode/owner/group of files.
func (s *Sandbox) SetPermissions(ctx context.Context, req PermissionsRequest) error {
	entries := make([]map[string]any, 0, len(req))
	for path, p := range req {
		e := map[string]any{"path": path, "mode": p.Mode}
		if p.Owner != "" {
			e["owner"] = p.Owner
		}
		if p.Group != "" {
			e["group"] = p.Group
		}
		entries = append(entries, e)
	}
	return s.op(ctx, "files.set_permissions", map[string]any{"entries": entries}, nil)
}

// CreateDirectory creates a directory (and its parents) with mode (octal digits as
// decimal, e.g. 755).
func (s *Sandbox) CreateDirectory(ctx context.Context, path string, mode int) error {
	e := map[string]any{"path": path}
	if mode != 0 {
		e["mode"] = mode
	}
	return s.op(ctx, "files.create_directories", map[string]any{"entries": []any{e}}, nil)
}

// DeleteDirectory deletes a directory recursively.
func (s *Sandbox) DeleteDirectory(ctx context.Context, path string) error {
	return s.op(ctx, "files.delete_directories", map[string]any{"paths": []string{path}}, nil)
}

func replaceEntries(req ReplaceRequest) map[string]any {
	entries := make([]map[string]any, 0, len(req))
	for path, r := range req {
		entries = append(entries, map[string]any{"path": path, "old_content": r.Old, "new_content": r.New})
	}
	return map[string]any{"entries": entries}
}

// ReplaceInFiles replaces text in files.
func (s *Sandbox) ReplaceInFiles(ctx context.Context, req ReplaceRequest) error {
	return s.op(ctx, "files.replace_contents", replaceEntries(req), nil)
}

// ReplaceInFilesDetailed replaces text and reports the count per file.
func (s *Sandbox) ReplaceInFilesDetailed(ctx context.Context, req ReplaceRequest) (ReplaceResponse, error) {
	var raw []struct {
		Path          string `json:"path"`
		ReplacedCount int    `json:"replaced_count"`
	}
	if err := s.op(ctx, "files.replace_contents_detailed", replaceEntries(req), &raw); err != nil {
		return nil, err
	}
	out := ReplaceResponse{}
	for _, r := range raw {
		out[r.Path] = ReplaceResult{ReplacedCount: r.ReplacedCount}
	}
	return out, nil
}

// OctalMode converts an os.FileMode to octal digits as decimal (0755 -> 755).
func OctalMode(m os.FileMode) int {
	v, _ := strconv.Atoi(strconv.FormatUint(uint64(m.Perm()), 8))
	return v
}

// UploadFile streams file to opts.Metadata.Path (never holding it in memory).
func (s *Sandbox) UploadFile(ctx context.Context, file io.Reader, opts UploadFileOptions) error {
	if file == nil {
		return &InvalidArgumentError{Field: "file", Message: "file reader is required"}
	}
	if opts.Metadata.Path == "" {
		return &InvalidArgumentError{Field: "metadata.path", Message: "path is required"}
	}
	args := map[string]any{"path": opts.Metadata.Path}
	if opts.Metadata.Mode != 0 {
		args["mode"] = opts.Metadata.Mode
	}
	if opts.Metadata.Owner != "" {
		args["owner"] = opts.Metadata.Owner
	}
	if opts.Metadata.Group != "" {
		args["group"] = opts.Metadata.Group
	}
	if n, ok := knownLength(file); ok {
		// A known length goes out as Content-Length: the agent sometimes answers a
		// chunked upload before the proxy sent its end (502 AGENT_UNREACHABLE,
		// architecture.md known gaps), and upload.finish checks the count.
		args["size"] = n
	}
	if f, ok := file.(*os.File); ok {
		if handled, err := s.uploadOSFile(ctx, f, args); handled {
			return err
		}
	}
	var opened struct {
		Handle uint64 `json:"handle"`
	}
	if err := s.op(ctx, "upload.open", args, &opened); err != nil {
		return err
	}
	finished := false
	defer func() {
		if !finished {
			opRelease(opened.Handle) // aborts the request
		}
	}()
	sess, err := session()
	if err != nil {
		return err
	}
	tok, release := withCancel(ctx)
	buf := make([]byte, uploadChunk)
	ended := false
	for !ended {
		n, rerr := io.ReadFull(file, buf)
		if n > 0 {
			var e *C.OsbError
			switch C.osb_session_upload_write_blocking(sess, C.uint64_t(opened.Handle), (*C.uint8_t)(unsafe.Pointer(&buf[0])), C.size_t(n), tok, &e) {
			case 0:
			case 1:
				ended = true // the request already ended: upload.finish reports why
			default:
				release()
				return takeError(ctx, e)
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			release()
			return rerr
		}
	}
	release()
	finished = true
	return opCall(ctx, "upload.finish", map[string]any{"handle": opened.Handle}, nil)
}

// uploadOSFile uploads the rest of a regular file (from its current offset) by handing
// the library a duplicate of its descriptor: the library reads the file itself, with no
// copy through cgo per chunk. handled is false (nothing done) for anything that is not
// a regular file, or when the descriptor cannot be duplicated: the caller then copies
// the data in chunks. Afterwards f's offset is where a full read leaves it (its end),
// or back where it was when the upload failed.
func (s *Sandbox) uploadOSFile(ctx context.Context, f *os.File, args map[string]any) (handled bool, err error) {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return false, nil
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return false, nil
	}
	n := st.Size() - off
	if n < 0 {
		n = 0 // past the end: a read gives nothing
	}
	args["size"] = n
	if err := ctx.Err(); err != nil {
		return true, err
	}
	h, err := s.opHandle(ctx)
	if err != nil {
		return true, err
	}
	sess, err := session()
	if err != nil {
		return true, err
	}
	args["sandbox"] = h
	s.scopeArgs("upload.open", args)
	if opTrace != nil {
		opTrace("upload.open", args) // the same arguments as upload.open
	}
	cargs, err := marshalArgs(args)
	if err != nil {
		return true, err
	}
	defer C.free(unsafe.Pointer(cargs))
	fd, err := dupFile(f)
	if err != nil {
		return false, nil
	}
	tok, release := withCancel(ctx)
	defer release()
	var e *C.OsbError
	// The library owns fd from here on (it closes it, also on error).
	rc := C.osb_session_upload_fd_blocking(sess, cargs, C.int32_t(fd), C.uint64_t(off), C.uint64_t(n), tok, &e)
	if rc != 0 {
		_, _ = f.Seek(off, io.SeekStart)
		return true, takeError(ctx, e)
	}
	if _, err := f.Seek(off+n, io.SeekStart); err != nil {
		return true, err
	}
	return true, nil
}

// knownLength is the number of bytes left in r when r says so without being read:
// in-memory readers (Len) and regular files (size minus the current offset).
func knownLength(r io.Reader) (int64, bool) {
	switch v := r.(type) {
	case interface{ Len() int }:
		return int64(v.Len()), true
	case *os.File:
		st, err := v.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return 0, false
		}
		off, err := v.Seek(0, io.SeekCurrent)
		if err != nil || off > st.Size() {
			return 0, false
		}
		return st.Size() - off, true
	}
	return 0, false
}

// UploadFiles uploads several files (one request per file).
func (s *Sandbox) UploadFiles(ctx context.Context, entries []UploadFileEntry) error {
	if len(entries) == 0 {
		return &InvalidArgumentError{Field: "entries", Message: "at least one file entry is required"}
	}
	for _, e := range entries {
		if err := s.UploadFile(ctx, e.File, e.Options); err != nil {
			return err
		}
	}
	return nil
}

// DownloadFile streams a file. rangeHeader (e.g. "bytes=0-1023") or opts (line
// offset/limit) select a part. The caller must Close the reader; ctx bounds the whole
// download.
func (s *Sandbox) DownloadFile(ctx context.Context, remotePath, rangeHeader string, opts ...DownloadFileOptions) (io.ReadCloser, error) {
	args := map[string]any{"path": remotePath}
	if rangeHeader != "" {
		args["range"] = rangeHeader
	}
	if len(opts) > 0 {
		if opts[0].Offset > 0 {
			args["offset"] = opts[0].Offset
		}
		if opts[0].Limit > 0 {
			args["limit"] = opts[0].Limit
		}
	}
	var opened struct {
		Handle uint64 `json:"handle"`
	}
	if err := s.op(ctx, "download.open", args, &opened); err != nil {
		return nil, err
	}
	tok, release := withCancel(ctx)
	r := &downloadReader{ctx: ctx, h: opened.Handle, tok: tok, release: release}
	runtime.SetFinalizer(r, func(r *downloadReader) { _ = r.Close() })
	return r, nil
}

type downloadReader struct {
	ctx     context.Context
	mu      sync.Mutex
	h       uint64 // the session's download handle, 0 once closed
	tok     *C.OsbCancel
	release func()
	eof     bool
}

var errReaderClosed = errors.New("opensandbox: read from a closed download")

func (r *downloadReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.h == 0 {
		return 0, errReaderClosed
	}
	if r.eof {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	sess, err := session()
	if err != nil {
		return 0, err
	}
	var e *C.OsbError
	n := C.osb_session_download_read(sess, C.uint64_t(r.h), (*C.uint8_t)(unsafe.Pointer(&p[0])), C.size_t(len(p)), r.tok, &e)
	switch {
	case n < 0:
		return 0, takeError(r.ctx, e)
	case n == 0:
		r.eof = true
		return 0, io.EOF
	}
	return int(n), nil
}

func (r *downloadReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.h != 0 {
		opRelease(r.h)
		r.h = 0
		r.release()
	}
	return nil
}

// WriteTo copies the rest of the download to w with large reads (io.Copy uses it).
func (r *downloadReader) WriteTo(w io.Writer) (int64, error) {
	buf := make([]byte, 1<<20)
	var total int64
	for {
		n, err := r.Read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}
