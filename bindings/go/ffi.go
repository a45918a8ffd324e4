package opensandbox

/*
#cgo CFLAGS: -I${SRCDIR}/../ffi/include
#cgo !opensandbox_release LDFLAGS: ${SRCDIR}/../../target/debug/libopensandbox_ffi.a -ldl -lm -lpthread
#cgo opensandbox_release LDFLAGS: ${SRCDIR}/../../target/release/libopensandbox_ffi.a -ldl -lm -lpthread
#include <stdlib.h>
#include <string.h>
#include "opensandbox.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"errors"
	"unsafe"
)

// nativeStamp is set at link time by the Makefile (mtime and size of the static
// library) so that Go relinks when the library changes; it is not used otherwise.
var nativeStamp string

// NativeVersion returns the version of the linked native library.
func NativeVersion() string { return C.GoString(C.osb_version()) }

// takeJSON decodes an owned JSON string from the library (read in place, without a
// copy) into out (nil = ignore it) and frees it.
func takeJSON(p unsafe.Pointer, out any) error {
	if p == nil {
		return nil
	}
	defer C.osb_string_free((*C.char)(p))
	if out == nil {
		return nil
	}
	b := unsafe.Slice((*byte)(p), int(C.strlen((*C.char)(p))))
	if err := decodeResult(b, out); err != nil {
		return &Error{Kind: "internal", Message: "cannot decode a library result: " + err.Error()}
	}
	return nil
}

// marshalArgs encodes args as a C string in C memory (free with C.free), for a call
// that keeps it beyond one cgo call.
func marshalArgs(args any) (*C.char, error) {
	if args == nil {
		return nil, nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, &InvalidArgumentError{Field: "arguments", Message: err.Error()}
	}
	return C.CString(string(b)), nil
}

// withCancel makes a native token that is cancelled when ctx is done, for blocking
// exports. release must be called once the token is no longer used.
func withCancel(ctx context.Context) (tok *C.OsbCancel, release func()) {
	if ctx.Done() == nil {
		return nil, func() {}
	}
	tok = C.osb_cancel_new()
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		C.osb_cancel_cancel(tok)
		close(fired)
	})
	return tok, func() {
		if !stop() {
			<-fired
		}
		C.osb_cancel_free(tok)
	}
}

// takeError converts (and frees) a native error into the package's error types.
func takeError(ctx context.Context, e *C.OsbError) error {
	defer C.osb_error_free(e)
	opt := func(p *C.char) string {
		if p == nil {
			return ""
		}
		return C.GoString(p)
	}
	base := &Error{
		Kind:       C.GoString(C.osb_error_kind(e)),
		StatusCode: int(C.osb_error_status(e)),
		Code:       opt(C.osb_error_code(e)),
		Message:    opt(C.osb_error_message(e)),
		RequestID:  opt(C.osb_error_request_id(e)),
		Operation:  opt(C.osb_error_operation(e)),
	}
	return convertError(ctx, base)
}

func convertError(ctx context.Context, base *Error) error {
	switch base.Kind {
	case "cancelled":
		if ctx != nil && ctx.Err() != nil {
			return &Error{Kind: base.Kind, Message: base.Message, Operation: base.Operation, cause: ctx.Err()}
		}
		return base
	case "timeout":
		if ctx != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			base.cause = ctx.Err()
		}
		return base
	case "invalid_argument":
		return &InvalidArgumentError{Field: base.Operation, Message: base.Message}
	case "ready_timeout":
		return &SandboxReadyTimeoutError{Elapsed: "", LastErr: base}
	}
	if base.StatusCode != 0 {
		return &APIError{
			StatusCode: base.StatusCode,
			RequestID:  base.RequestID,
			Response:   ErrorResponse{Code: base.Code, Message: base.Message},
			kind:       base.Kind,
		}
	}
	return base
}
