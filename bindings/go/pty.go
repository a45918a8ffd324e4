package opensandbox

// PTY sessions (the execd WebSocket terminal, shared docs pty.md) and the live follow
// of a background command's log. CreatePtySession, GetPtySession and
// DeletePtySession are the official module's names; AttachPty (the official module
// leaves the WebSocket to the caller) returns an io.ReadWriteCloser.

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"sync"
)

// PtyCreateRequest is the optional body for creating a PTY session.
type PtyCreateRequest struct {
	// Cwd is the working directory ($VAR and ~ expanded, created if missing).
	Cwd string
	// Command runs (bash -c) instead of an interactive shell when set.
	Command string
}

// PtySession identifies a created PTY session. The shell starts on the first attach.
type PtySession struct {
	SessionID string `json:"session_id"`
}

// PtySessionStatus is the status of a PTY session.
type PtySessionStatus struct {
	SessionID string `json:"session_id"`
	Running   bool   `json:"running"`
	// OutputOffset is the count of bytes ever produced; passing it as Since replays
	// nothing (a bookmark taken while caught up).
	OutputOffset int64 `json:"output_offset"`
}

// PtyAttachOptions configures AttachPty.
type PtyAttachOptions struct {
	// Since replays buffered output from this byte offset (nil: from 0, all that
	// is still buffered).
	Since *int64
	// Pipe starts the shell on pipes instead of a terminal (only if this attach
	// starts it).
	Pipe bool
	// Takeover evicts a client holding the session instead of failing with 409.
	Takeover bool
}

// CreatePtySession creates a new interactive PTY session on the sandbox.
func (s *Sandbox) CreatePtySession(ctx context.Context, req PtyCreateRequest) (*PtySession, error) {
	args := map[string]any{}
	if req.Cwd != "" {
		args["cwd"] = req.Cwd
	}
	if req.Command != "" {
		args["command"] = req.Command
	}
	var out PtySession
	if err := s.op(ctx, "pty.create", args, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetPtySession returns the status of a PTY session on the sandbox.
func (s *Sandbox) GetPtySession(ctx context.Context, sessionID string) (*PtySessionStatus, error) {
	var out PtySessionStatus
	if err := s.op(ctx, "pty.get", map[string]any{"session_id": sessionID}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeletePtySession kills the session's shell and forgets the session.
func (s *Sandbox) DeletePtySession(ctx context.Context, sessionID string) error {
	return s.op(ctx, "pty.delete", map[string]any{"session_id": sessionID}, nil)
}

// PtyRead is one read of a PtyConn (ReadChunk).
type PtyRead struct {
	Data []byte
	// Offset is the absolute offset of Data's first byte (-1 when Data is empty).
	Offset     int64
	NextOffset int64
	// Channel is "stdout", "stderr" (pipe mode) or "replay".
	Channel  string
	ExitCode *int
	Closed   bool
	// CloseCode is 1000 after an exit, 4001 when another client took over.
	CloseCode *int
	TimedOut  bool
	Done      bool
}

// PtyReadOptions bound a ReadChunk.
type PtyReadOptions struct {
	// Until reads until the output of this call contains this text.
	Until string
	// UntilExit reads until the shell exits and the connection closes.
	UntilExit bool
	// WaitMs bounds the wait (TimedOut then); 0 = the op layer's default.
	WaitMs int64
}

// PtyConn is an attached PTY session: an io.ReadWriteCloser (Read returns terminal
// output, Write types, Close detaches while the shell keeps running) plus Resize,
// Signal and the offsets to reattach with.
type PtyConn struct {
	sessionID string
	mode      string

	mu         sync.Mutex
	handle     uint64
	pending    []byte
	nextOffset int64
	exitCode   *int
	closeCode  *int
	done       bool
}

var _ io.ReadWriteCloser = (*PtyConn)(nil)

// AttachPty attaches to a PTY session over its WebSocket. A session held by another
// client fails with a 409 ALREADY_CONNECTED *Error unless opts.Takeover.
func (s *Sandbox) AttachPty(ctx context.Context, sessionID string, opts PtyAttachOptions) (*PtyConn, error) {
	args := map[string]any{"session_id": sessionID, "takeover": opts.Takeover}
	if opts.Since != nil {
		args["since"] = *opts.Since
	}
	if opts.Pipe {
		args["mode"] = "pipe"
	}
	var out struct {
		Handle uint64 `json:"handle"`
		Mode   string `json:"mode"`
		Since  int64  `json:"since"`
	}
	if err := s.op(ctx, "pty.attach", args, &out); err != nil {
		return nil, err
	}
	return &PtyConn{sessionID: sessionID, mode: out.Mode, handle: out.Handle, nextOffset: out.Since}, nil
}

// SessionID is the attached session's id.
func (c *PtyConn) SessionID() string { return c.sessionID }

// Mode is "pty" or "pipe": how the shell really runs.
func (c *PtyConn) Mode() string { return c.mode }

// NextOffset is the offset after the last byte read: pass it as Since to resume
// exactly there.
func (c *PtyConn) NextOffset() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nextOffset - int64(len(c.pending))
}

// ExitCode is the shell's exit code once seen (-1: killed by a signal).
func (c *PtyConn) ExitCode() *int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exitCode
}

// CloseCode is the server's close code once the connection ended.
func (c *PtyConn) CloseCode() *int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeCode
}

var errPtyClosed = errors.New("opensandbox: pty connection is closed")

func (c *PtyConn) h() (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.handle == 0 {
		return 0, errPtyClosed
	}
	return c.handle, nil
}

// ReadChunk is one read: what has arrived (waiting for something, one channel at a
// time), or with opts.Until / opts.UntilExit all output up to that point.
func (c *PtyConn) ReadChunk(ctx context.Context, opts PtyReadOptions) (*PtyRead, error) {
	h, err := c.h()
	if err != nil {
		return nil, err
	}
	args := map[string]any{"handle": h}
	if opts.Until != "" {
		args["until"] = opts.Until
	}
	if opts.UntilExit {
		args["until_exit"] = true
	}
	if opts.WaitMs > 0 {
		args["wait_ms"] = opts.WaitMs
	}
	var raw struct {
		DataB64    string  `json:"data_b64"`
		Offset     *int64  `json:"offset"`
		NextOffset int64   `json:"next_offset"`
		Channel    *string `json:"channel"`
		ExitCode   *int    `json:"exit_code"`
		Closed     bool    `json:"closed"`
		CloseCode  *int    `json:"close_code"`
		TimedOut   bool    `json:"timed_out"`
		Done       bool    `json:"done"`
	}
	if err := opCall(ctx, "pty.read", args, &raw); err != nil {
		return nil, err
	}
	data, err := base64.StdEncoding.DecodeString(raw.DataB64)
	if err != nil {
		return nil, &Error{Kind: "internal", Message: "pty.read: bad base64: " + err.Error()}
	}
	r := &PtyRead{Data: data, Offset: -1, NextOffset: raw.NextOffset, ExitCode: raw.ExitCode,
		Closed: raw.Closed, CloseCode: raw.CloseCode, TimedOut: raw.TimedOut, Done: raw.Done}
	if raw.Offset != nil {
		r.Offset = *raw.Offset
	}
	if raw.Channel != nil {
		r.Channel = *raw.Channel
	}
	c.mu.Lock()
	c.nextOffset = raw.NextOffset
	if raw.ExitCode != nil {
		c.exitCode = raw.ExitCode
	}
	if raw.CloseCode != nil {
		c.closeCode = raw.CloseCode
	}
	c.done = raw.Done
	c.mu.Unlock()
	return r, nil
}

// Read reads terminal output (stdout and stderr alike); io.EOF once the connection
// has closed and everything was read.
func (c *PtyConn) Read(p []byte) (int, error) {
	for {
		c.mu.Lock()
		if len(c.pending) > 0 {
			n := copy(p, c.pending)
			c.pending = c.pending[n:]
			c.mu.Unlock()
			return n, nil
		}
		done := c.done
		c.mu.Unlock()
		if done {
			return 0, io.EOF
		}
		r, err := c.ReadChunk(context.Background(), PtyReadOptions{})
		if err != nil {
			if errors.Is(err, errPtyClosed) {
				return 0, io.EOF
			}
			return 0, err
		}
		c.mu.Lock()
		c.pending = append(c.pending, r.Data...)
		c.mu.Unlock()
	}
}

// Write sends p to the shell's input (typed keys in PTY mode: "\r" is Enter).
func (c *PtyConn) Write(p []byte) (int, error) {
	h, err := c.h()
	if err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	args := map[string]any{"handle": h, "data_b64": base64.StdEncoding.EncodeToString(p)}
	if err := opCall(context.Background(), "pty.write", args, nil); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Resize sets the terminal size (the foreground program gets SIGWINCH).
func (c *PtyConn) Resize(ctx context.Context, cols, rows int) error {
	h, err := c.h()
	if err != nil {
		return err
	}
	return opCall(ctx, "pty.resize", map[string]any{"handle": h, "cols": cols, "rows": rows}, nil)
}

// Signal sends SIGINT, SIGTERM, SIGKILL, SIGQUIT or SIGHUP to the shell's group.
func (c *PtyConn) Signal(ctx context.Context, name string) error {
	h, err := c.h()
	if err != nil {
		return err
	}
	return opCall(ctx, "pty.signal", map[string]any{"handle": h, "signal": name}, nil)
}

// Close detaches; the shell keeps running (reattach with Since: NextOffset()).
func (c *PtyConn) Close() error {
	c.mu.Lock()
	h := c.handle
	c.handle = 0
	c.done = true
	c.mu.Unlock()
	if h == 0 {
		return nil
	}
	var out struct {
		NextOffset int64 `json:"next_offset"`
	}
	err := opCall(context.Background(), "pty.close", map[string]any{"handle": h}, &out)
	if err == nil {
		c.mu.Lock()
		c.nextOffset = out.NextOffset
		c.mu.Unlock()
	}
	return err
}

// LogChunk is a slice of a background command's log at byte Offset.
type LogChunk struct {
	Offset int64
	Data   []byte
}

// FollowCommandLogs calls handler with a background command's output as it is
// written, from cursor on, each chunk starting where the previous ended, until the
// command finished and everything it wrote was delivered (nil), ctx is done
// (ctx.Err()) or handler returns an error (that error). Works from any process that
// knows the command id.
func (s *Sandbox) FollowCommandLogs(ctx context.Context, commandID string, cursor int64, handler func(LogChunk) error) error {
	var started struct {
		Handle uint64 `json:"handle"`
	}
	if err := s.op(ctx, "commands.follow_logs", map[string]any{"id": commandID, "cursor": cursor}, &started); err != nil {
		return err
	}
	defer opRelease(started.Handle)
	next := map[string]any{"handle": started.Handle}
	for {
		var batch struct {
			Events []struct {
				Type    string     `json:"type"`
				OK      bool       `json:"ok"`
				Error   *wireError `json:"error"`
				Offset  int64      `json:"offset"`
				DataB64 string     `json:"data_b64"`
			} `json:"events"`
			Done bool `json:"done"`
		}
		if err := opCall(ctx, "execution.next_batch", next, &batch); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		for _, item := range batch.Events {
			switch item.Type {
			case "log":
				data, err := base64.StdEncoding.DecodeString(item.DataB64)
				if err != nil {
					return &Error{Kind: "internal", Message: "bad log chunk: " + err.Error()}
				}
				if err := handler(LogChunk{Offset: item.Offset, Data: data}); err != nil {
					return err
				}
			case "end":
				if !item.OK && item.Error != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					return item.Error.toError(ctx)
				}
				return nil
			}
		}
		if batch.Done {
			return nil
		}
	}
}
