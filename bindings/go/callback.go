package opensandbox

/*
#include "opensandbox.h"
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"
)

// goOsbDone is the completion callback of every async export (API.md §3). It runs on
// a library thread and only hands the outcome to the waiting goroutine.
//
//export goOsbDone
func goOsbDone(userData C.uintptr_t, result unsafe.Pointer, err *C.OsbError) {
	ch := cgo.Handle(userData).Value().(chan outcome)
	ch <- outcome{result: result, err: err}
}
