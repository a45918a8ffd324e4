package opensandbox

/*
#include <stdlib.h>
#include "opensandbox.h"
*/
import "C"

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"unsafe"
)

// itemsPerBatch is the most items pulled per crossing of the C ABI.
const itemsPerBatch = 4096

// Kinds of the binary item layout (bindings/ffi/API.md §4 "Executions").
const (
	itemJSON   = 0
	itemStdout = 1
	itemStderr = 2
)

// itemBatch is one pull of a run's items (osb_session_next_items_blocking): output lines
// arrive as raw text, so a line costs a string copy instead of a JSON decode; every
// other item is decoded from its JSON object.
type itemBatch struct {
	Events []wireEvent
	Done   bool
}

// next replaces the batch with the run's next already-arrived items (waiting for the
// first one).
func (b *itemBatch) next(ctx context.Context, handle uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s, err := session()
	if err != nil {
		return err
	}
	tok, release := withCancel(ctx)
	defer release()
	var e *C.OsbError
	chunk := C.osb_session_next_items_blocking(s, C.uint64_t(handle), C.size_t(itemsPerBatch), tok, &e)
	if chunk == nil {
		return takeError(ctx, e)
	}
	defer C.osb_chunk_free(chunk)
	var n C.size_t
	p := C.osb_chunk_data(chunk, &n)
	return b.decode(unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n)))
}

// decode reads the layout; the texts are copied out of buf (which the library frees).
func (b *itemBatch) decode(buf []byte) error {
	b.Events = b.Events[:0]
	bad := &Error{Kind: "internal", Message: "cannot decode a batch of run items"}
	if len(buf) < 1 {
		return bad
	}
	b.Done = buf[0] == 1
	for at := 1; at < len(buf); {
		if len(buf)-at < 13 {
			return bad
		}
		kind := buf[at]
		ts := int64(binary.LittleEndian.Uint64(buf[at+1:]))
		size := int(binary.LittleEndian.Uint32(buf[at+9:]))
		at += 13
		if size < 0 || len(buf)-at < size {
			return bad
		}
		data := buf[at : at+size]
		at += size
		switch kind {
		case itemStdout, itemStderr:
			text := string(data)
			typ := "stdout"
			if kind == itemStderr {
				typ = "stderr"
			}
			b.Events = append(b.Events, wireEvent{Type: typ, Text: &text, Timestamp: ts})
		case itemJSON:
			ev, ok := scanEvent(data)
			if ok {
				b.Events = append(b.Events, ev)
				continue
			}
			ev = wireEvent{}
			if err := json.Unmarshal(data, &ev); err != nil {
				return &Error{Kind: "internal", Message: "cannot decode a run item: " + err.Error()}
			}
			b.Events = append(b.Events, ev)
		default:
			return bad
		}
	}
	return nil
}
