package opensandbox

/*
#include <stdlib.h>
#include "opensandbox.h"
*/
import "C"

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode"
	"unsafe"
)

// The op layer of bindings/common behind the C ABI's session functions (API.md §7):
// ops by name with JSON arguments, one error payload, runs pulled in batches whose
// last item carries the outcome folded by the core. The package uses one session on
// one explicit runtime (osb_runtime_new) for the whole life of the process: Go has no
// exit hook to free it, and the runtime's threads end with the process.
var nativeSession struct {
	once sync.Once
	s    *C.OsbSession
	err  error
}

func session() (*C.OsbSession, error) {
	nativeSession.once.Do(func() {
		var e *C.OsbError
		opts := C.CString(`{"thread_name":"opensandbox-go-worker"}`)
		defer C.free(unsafe.Pointer(opts))
		rt := C.osb_runtime_new(opts, &e)
		if rt == nil {
			nativeSession.err = takeError(nil, e)
			return
		}
		// The session keeps its own reference to the runtime.
		defer C.osb_runtime_free(rt)
		s := C.osb_session_new(rt, &e)
		if s == nil {
			nativeSession.err = takeError(nil, e)
			return
		}
		nativeSession.s = s
	})
	return nativeSession.s, nativeSession.err
}

// opCall runs one op of the session on this goroutine's thread and decodes its result
// into out (nil = ignore it). ctx cancels the native call.
func opCall(ctx context.Context, op string, args map[string]any, out any) error {
	if opTrace != nil {
		opTrace(op, args)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s, err := session()
	if err != nil {
		return err
	}
	var cargs *C.char
	if args != nil {
		// Go memory handed to the library for the call only (it holds no Go pointers).
		bp, err := encodeArgs(args)
		if err != nil {
			return err
		}
		defer putArgs(bp)
		cargs = (*C.char)(unsafe.Pointer(&(*bp)[0]))
	}
	cop := opName(op)
	tok, release := withCancel(ctx)
	defer release()
	var e *C.OsbError
	res := C.osb_session_call_blocking(s, cop, cargs, tok, &e)
	if res == nil {
		return takeError(ctx, e)
	}
	return takeJSON(unsafe.Pointer(res), out)
}

// opNames holds the C strings of the op names (a fixed set), made once each.
var opNames sync.Map

func opName(op string) *C.char {
	if p, ok := opNames.Load(op); ok {
		return p.(*C.char)
	}
	c := C.CString(op)
	p, loaded := opNames.LoadOrStore(op, c)
	if loaded {
		C.free(unsafe.Pointer(c))
	}
	return p.(*C.char)
}

// opTrace, when set (tests), sees every op and its arguments before they are sent.
var opTrace func(op string, args map[string]any)

// opsManifest is the op layer's manifest (osb_ops_manifest).
func opsManifest() (string, error) {
	p := C.osb_ops_manifest()
	if p == nil {
		return "", &Error{Kind: "internal", Message: "no ops manifest"}
	}
	defer C.osb_string_free(p)
	return C.GoString(p), nil
}

// opRelease frees a session handle (a run is cancelled: its command is interrupted).
func opRelease(h uint64) {
	if s, err := session(); err == nil && h != 0 {
		C.osb_session_release(s, C.uint64_t(h))
	}
}

// opHandle is the session's handle of this sandbox (from sandbox.create / connect /
// resume), released by Close.
func (s *Sandbox) opHandle(ctx context.Context) (uint64, error) {
	if s.owner != nil {
		return s.owner.opHandle(ctx)
	}
	s.opMu.Lock()
	defer s.opMu.Unlock()
	if s.opH == 0 {
		return 0, errClosed
	}
	return s.opH, nil
}

func (s *Sandbox) releaseOpHandle() {
	if s.owner != nil {
		return // a view: the owner releases the handle
	}
	s.opMu.Lock()
	defer s.opMu.Unlock()
	opRelease(s.opH)
	s.opH = 0
}

// wireOut decodes an op result in the op layer's dialect (snake_case keys, PROTOCOL.md
// §2.2) into a public type whose json tags follow the official SDK (camelCase): each
// struct field is read from the snake_case form of its json name, or from its `wire`
// tag when the layer names it otherwise. Map keys (metadata, headers) are data and
// stay as they are.
type wireOut struct{ v any }

func (w *wireOut) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return err
	}
	out, err := json.Marshal(rekey(tree, reflect.TypeOf(w.v), false))
	if err != nil {
		return err
	}
	return json.Unmarshal(out, w.v)
}

var timeType = reflect.TypeOf(time.Time{})

// wireArg is v (a public type) as an op argument in the op layer's dialect: the
// inverse of wireOut.
func wireArg(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var tree any
	if dec.Decode(&tree) != nil {
		return v
	}
	return rekey(tree, reflect.TypeOf(v), true)
}

// rekey renames the keys of a decoded JSON tree shaped as t: from the op layer's
// names to t's json names, or back (toWire).
func rekey(v any, t reflect.Type, toWire bool) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok || t == timeType {
			return v
		}
		out := make(map[string]any, len(m))
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			key := f.Tag.Get("wire")
			if key == "" {
				key = snakeCase(name)
			}
			from, to := key, name
			if toWire {
				from, to = name, key
			}
			if x, ok := m[from]; ok {
				out[to] = rekey(x, f.Type, toWire)
			}
		}
		return out
	case reflect.Slice, reflect.Array:
		if l, ok := v.([]any); ok {
			for i := range l {
				l[i] = rekey(l[i], t.Elem(), toWire)
			}
		}
	case reflect.Map:
		if m, ok := v.(map[string]any); ok {
			for k, x := range m {
				m[k] = rekey(x, t.Elem(), toWire)
			}
		}
	}
	return v
}

// snakeCase turns a camelCase json name into the op layer's key ("lastTransitionAt" →
// "last_transition_at").
func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// opWire runs op and decodes its result with wireOut.
func opWire(ctx context.Context, op string, args map[string]any, out any) error {
	if out == nil {
		return opCall(ctx, op, args, nil)
	}
	return opCall(ctx, op, args, &wireOut{out})
}

// Items of execution.next_batch (bindings/common/README.md).
type wireEvent struct {
	Type      string                     `json:"type"`
	ID        string                     `json:"id"`
	Text      *string                    `json:"text"`
	Timestamp int64                      `json:"timestamp"`
	Raw       map[string]json.RawMessage `json:"raw"`
	Name      string                     `json:"name"`
	Value     string                     `json:"value"`
	Traceback []string                   `json:"traceback"`
	TimeMs    int64                      `json:"execution_time_ms"`
	Count     *int                       `json:"count"`
	OK        bool                       `json:"ok"`
	Execution *wireExecution             `json:"execution"`
	Error     *wireError                 `json:"error"`
}

type wireError struct {
	Kind      string  `json:"kind"`
	Status    *int    `json:"status"`
	Code      *string `json:"code"`
	Message   string  `json:"message"`
	RequestID *string `json:"request_id"`
	Operation *string `json:"operation"`
}

func (w *wireError) toError(ctx context.Context) error {
	s := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	base := &Error{Kind: w.Kind, Code: s(w.Code), Message: w.Message, RequestID: s(w.RequestID), Operation: s(w.Operation)}
	if w.Status != nil {
		base.StatusCode = *w.Status
	}
	return convertError(ctx, base)
}

type wireResult struct {
	Text      *string                    `json:"text"`
	Timestamp int64                      `json:"timestamp"`
	Raw       map[string]json.RawMessage `json:"raw"`
}

// The Execution of the op layer, folded by the core's ExecutionBuilder.
type wireExecution struct {
	ID             *string      `json:"id"`
	ExitCode       *int         `json:"exit_code"`
	Stdout         []string     `json:"stdout"`
	Stderr         []string     `json:"stderr"`
	StdoutTimes    []int64      `json:"stdout_timestamps"`
	StderrTimes    []int64      `json:"stderr_timestamps"`
	Results        []wireResult `json:"results"`
	ExecutionCount *int         `json:"execution_count"`
	Error          *wireEvent   `json:"error"`
	Complete       *wireEvent   `json:"complete"`
}

func toResult(text *string, ts int64, raw map[string]json.RawMessage) ExecutionResult {
	res := ExecutionResult{Timestamp: ts, Results: map[string]string{}}
	for k, v := range raw {
		var s string
		if json.Unmarshal(v, &s) == nil {
			res.Results[k] = s
		} else {
			res.Results[k] = string(v)
		}
	}
	if text != nil {
		if _, ok := res.Results["text/plain"]; !ok {
			res.Results["text/plain"] = *text
		}
	}
	return res
}

func messages(texts []string, times []int64) []OutputMessage {
	if len(texts) == 0 {
		return nil
	}
	out := make([]OutputMessage, len(texts))
	for i, t := range texts {
		out[i] = OutputMessage{Text: t}
		if i < len(times) {
			out[i].Timestamp = times[i]
		}
	}
	return out
}

func (w *wireExecution) toExecution() *Execution {
	ex := &Execution{
		Stdout:         messages(w.Stdout, w.StdoutTimes),
		Stderr:         messages(w.Stderr, w.StderrTimes),
		ExitCode:       w.ExitCode,
		ExecutionCount: w.ExecutionCount,
	}
	if w.ID != nil {
		ex.ID = *w.ID
	}
	for _, r := range w.Results {
		ex.Results = append(ex.Results, toResult(r.Text, r.Timestamp, r.Raw))
	}
	if e := w.Error; e != nil {
		ex.Error = &ExecutionError{Name: e.Name, Value: e.Value, Timestamp: e.Timestamp, Traceback: e.Traceback}
		if ex.Error.Traceback == nil {
			ex.Error.Traceback = []string{}
		}
	}
	if c := w.Complete; c != nil {
		ex.Complete = &ExecutionComplete{Timestamp: c.Timestamp, ExecutionTime: c.TimeMs}
	}
	return ex
}

// deliver calls the handler of one event.
func deliver(ev *wireEvent, h *ExecutionHandlers) error {
	text := ""
	if ev.Text != nil {
		text = *ev.Text
	}
	switch ev.Type {
	case "init":
		if h.OnInit != nil {
			return h.OnInit(ExecutionInit{ID: ev.ID, Timestamp: ev.Timestamp})
		}
	case "stdout":
		if h.OnStdout != nil {
			return h.OnStdout(OutputMessage{Text: text, Timestamp: ev.Timestamp})
		}
	case "stderr":
		if h.OnStderr != nil {
			return h.OnStderr(OutputMessage{Text: text, Timestamp: ev.Timestamp})
		}
	case "result":
		if h.OnResult != nil {
			return h.OnResult(toResult(ev.Text, ev.Timestamp, ev.Raw))
		}
	case "error":
		if h.OnError != nil {
			tb := ev.Traceback
			if tb == nil {
				tb = []string{}
			}
			return h.OnError(ExecutionError{Name: ev.Name, Value: ev.Value, Timestamp: ev.Timestamp, Traceback: tb})
		}
	case "execution_complete":
		if h.OnComplete != nil {
			return h.OnComplete(ExecutionComplete{Timestamp: ev.Timestamp, ExecutionTime: ev.TimeMs})
		}
	}
	return nil
}

// runOp starts a run with a start op (commands.start, commands.start_in_session,
// code.start), calls the handlers for its events in order, and returns the Execution
// the core folded (exit code, execution count, error, completion: the last item of
// the run). Cancelling ctx or a handler error ends the run the same way in every
// language: the run is released, which interrupts the command on the server.
func (s *Sandbox) runOp(ctx context.Context, op string, args map[string]any, h *ExecutionHandlers) (*Execution, error) {
	if h != nil && h.SkipAccumulation {
		args["skip_accumulation"] = true
	}
	var each func(*wireEvent) error
	if h != nil {
		each = func(ev *wireEvent) error { return deliver(ev, h) }
	}
	return s.runEvents(ctx, op, args, each)
}

// runEvents starts a run and passes each of its events (when each is non-nil) to
// each, on this goroutine; see runOp.
func (s *Sandbox) runEvents(ctx context.Context, op string, args map[string]any, each func(*wireEvent) error) (*Execution, error) {
	sb, err := s.opHandle(ctx)
	if err != nil {
		return nil, err
	}
	args["sandbox"] = sb
	args["handlers"] = each != nil
	s.scopeArgs(op, args)
	if each == nil {
		// Nothing wants the events: the run op runs it to its end in one native call,
		// instead of a start and a pull per batch (the same Execution:
		// TestOneCallRunEqualsTheStreamedRun). Cancelling ctx drops the op, which
		// interrupts the command on the server as a released run does.
		var w wireExecution
		if err := opCall(ctx, runOpOf(op), args, &w); err != nil {
			return nil, err
		}
		return w.toExecution(), nil
	}
	var started runStarted
	if err := opCall(ctx, op, args, &started); err != nil {
		return nil, err
	}
	defer opRelease(started.Handle)
	partial := &Execution{ID: started.ID}
	var batch itemBatch
	for {
		if err := batch.next(ctx, started.Handle); err != nil {
			return partial, err
		}
		for i := range batch.Events {
			ev := &batch.Events[i]
			if ev.Type == "end" {
				if !ev.OK || ev.Execution == nil {
					if ev.Error == nil {
						return partial, &Error{Kind: "internal", Message: "a run ended without its outcome"}
					}
					return partial, ev.Error.toError(ctx)
				}
				return ev.Execution.toExecution(), nil
			}
			if each != nil {
				if err := each(ev); err != nil {
					return partial, err
				}
			}
		}
		if batch.Done {
			return partial, &Error{Kind: "stream", Message: "the run ended without its outcome"}
		}
	}
}

// runOpOf is the op that runs what the start op starts, to its end.
func runOpOf(startOp string) string {
	switch startOp {
	case "commands.start":
		return "commands.run"
	case "commands.start_in_session":
		return "commands.run_in_session"
	case "code.start":
		return "code.run"
	case "isolation.start":
		return "isolation.run"
	}
	panic("opensandbox: no run op for " + startOp)
}

// op runs a sandbox-bound op of the session on this sandbox.
func (s *Sandbox) op(ctx context.Context, op string, args map[string]any, out any) error {
	h, err := s.opHandle(ctx)
	if err != nil {
		return err
	}
	if args == nil {
		args = map[string]any{}
	}
	args["sandbox"] = h
	s.scopeArgs(op, args)
	return opCall(ctx, op, args, out)
}

// opW runs a sandbox-bound op and decodes its result with wireOut.
func (s *Sandbox) opW(ctx context.Context, op string, args map[string]any, out any) error {
	if out == nil {
		return s.op(ctx, op, args, nil)
	}
	return s.op(ctx, op, args, &wireOut{out})
}
