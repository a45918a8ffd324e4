package opensandbox

import (
	"encoding/json"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// The JSON of the hot path without reflection: op arguments are small maps of a few
// value types, and the results of the file calls have one fixed shape. Anything else
// (another value type, an escape in a string, an unknown key) takes encoding/json, so
// these functions only ever make a call cheaper, never different.

// argsBuf recycles the buffers op arguments are encoded into.
var argsBuf = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// appendArgs appends args as a JSON object followed by a NUL (a C string for the
// library, borrowed for the call). ok is false when a value has a type this encoder
// does not write (the caller then uses encoding/json).
func appendArgs(dst []byte, args map[string]any) ([]byte, bool) {
	dst = append(dst, '{')
	first := true
	for k, v := range args {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		var ok bool
		if dst, ok = appendString(dst, k); !ok {
			return dst, false
		}
		dst = append(dst, ':')
		if dst, ok = appendValue(dst, v); !ok {
			return dst, false
		}
	}
	return append(dst, '}', 0), true
}

func appendValue(dst []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case string:
		return appendString(dst, x)
	case bool:
		return strconv.AppendBool(dst, x), true
	case int:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int64:
		return strconv.AppendInt(dst, x, 10), true
	case uint64:
		return strconv.AppendUint(dst, x, 10), true
	case []string:
		if x == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, s := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendString(dst, s); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	}
	return dst, false
}

// appendString writes s as a JSON string; ok is false for invalid UTF-8 (which
// encoding/json replaces, and this encoder leaves to it).
func appendString(dst []byte, s string) ([]byte, bool) {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return dst, false
			}
			i += size
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	return append(append(dst, s[start:]...), '"'), true
}

// encodeArgs is args as a NUL-terminated JSON object in a pooled buffer (put it back
// with putArgs once the call returned).
func encodeArgs(args map[string]any) (*[]byte, error) {
	bp := argsBuf.Get().(*[]byte)
	if b, ok := appendArgs((*bp)[:0], args); ok {
		*bp = b
		return bp, nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		argsBuf.Put(bp)
		return nil, &InvalidArgumentError{Field: "arguments", Message: err.Error()}
	}
	*bp = append(append((*bp)[:0], b...), 0)
	return bp, nil
}

func putArgs(bp *[]byte) {
	if cap(*bp) <= 64<<10 {
		argsBuf.Put(bp)
	}
}

// decodeResult decodes a library result into out: the file calls' shapes directly,
// everything else with encoding/json.
func decodeResult(b []byte, out any) error {
	switch o := out.(type) {
	case *map[string]FileInfo:
		if kv, ok := scanFileInfoMap(b); ok {
			if *o == nil {
				*o = make(map[string]FileInfo, len(kv))
			}
			for _, e := range kv {
				(*o)[e.key] = e.info
			}
			return nil
		}
	case *runStarted:
		if r, ok := scanStarted(b); ok {
			*o = r
			return nil
		}
	case *[]FileInfo:
		if l, ok := scanFileInfoList(b); ok {
			*o = l
			return nil
		}
	}
	return json.Unmarshal(b, out)
}

// scanner reads the JSON of one result. Every method reports false on anything it
// does not handle, and the caller then falls back to encoding/json.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// tok consumes c (after white space).
func (s *scanner) tok(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// null consumes a null literal.
func (s *scanner) null() bool {
	s.ws()
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// raw returns the bytes of a string without escapes (the caller copies them).
func (s *scanner) raw() ([]byte, bool) {
	if !s.tok('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '"' {
			s.i++
			return s.b[start : s.i-1], true
		}
		if c == '\\' || c < 0x20 {
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// str reads a string or null ("").
func (s *scanner) str() (string, bool) {
	if s.null() {
		return "", true
	}
	r, ok := s.raw()
	if !ok || !utf8.Valid(r) {
		return "", false
	}
	return string(r), true
}

// int reads an integer or null (0).
func (s *scanner) int() (int64, bool) {
	if s.null() {
		return 0, true
	}
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	v, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	return v, err == nil
}

// time reads an RFC 3339 time or null (the zero time).
func (s *scanner) time() (time.Time, bool) {
	if s.null() {
		return time.Time{}, true
	}
	s.ws()
	start := s.i
	if _, ok := s.raw(); !ok {
		return time.Time{}, false
	}
	// time.Time's own JSON decoding, as encoding/json would call it.
	var t time.Time
	return t, t.UnmarshalJSON(s.b[start:s.i]) == nil
}

// fileInfo reads one entry of the file calls (bindings/common convert::entry).
func (s *scanner) fileInfo() (FileInfo, bool) {
	var fi FileInfo
	if !s.tok('{') {
		return fi, false
	}
	if s.tok('}') {
		return fi, true
	}
	for {
		key, ok := s.raw()
		if !ok || !s.tok(':') {
			return fi, false
		}
		var n int64
		switch string(key) {
		case "path":
			fi.Path, ok = s.str()
		case "type":
			fi.Type, ok = s.str()
		case "owner":
			fi.Owner, ok = s.str()
		case "group":
			fi.Group, ok = s.str()
		case "size":
			fi.Size, ok = s.int()
		case "mode":
			n, ok = s.int()
			fi.Mode = int(n)
		case "modified_at":
			fi.ModifiedAt, ok = s.time()
		case "created_at":
			fi.CreatedAt, ok = s.time()
		default:
			return fi, false
		}
		if !ok {
			return fi, false
		}
		if s.tok('}') {
			return fi, true
		}
		if !s.tok(',') {
			return fi, false
		}
	}
}

// end reports whether only white space is left.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

type fileInfoEntry struct {
	key  string
	info FileInfo
}

// scanFileInfoMap reads `{path: entry}` (files.get_file_info), in order.
func scanFileInfoMap(b []byte) ([]fileInfoEntry, bool) {
	s := scanner{b: b}
	if !s.tok('{') {
		return nil, false
	}
	var kv []fileInfoEntry
	if s.tok('}') {
		return kv, s.end()
	}
	for {
		key, ok := s.str()
		if !ok || !s.tok(':') {
			return nil, false
		}
		fi, ok := s.fileInfo()
		if !ok {
			return nil, false
		}
		kv = append(kv, fileInfoEntry{key, fi})
		if s.tok('}') {
			return kv, s.end()
		}
		if !s.tok(',') {
			return nil, false
		}
	}
}

// scanFileInfoList reads `[entry, ...]` (files.list_directory, files.search).
func scanFileInfoList(b []byte) ([]FileInfo, bool) {
	s := scanner{b: b}
	if s.null() {
		return nil, s.end()
	}
	if !s.tok('[') {
		return nil, false
	}
	l := []FileInfo{}
	if s.tok(']') {
		return l, s.end()
	}
	for {
		fi, ok := s.fileInfo()
		if !ok {
			return nil, false
		}
		l = append(l, fi)
		if s.tok(']') {
			return l, s.end()
		}
		if !s.tok(',') {
			return nil, false
		}
	}
}

// bool reads true or false.
func (s *scanner) bool() (bool, bool) {
	s.ws()
	switch {
	case len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "true":
		s.i += 4
		return true, true
	case len(s.b)-s.i >= 5 && string(s.b[s.i:s.i+5]) == "false":
		s.i += 5
		return false, true
	}
	return false, false
}

// strPtr reads a string (as a new *string) or null (nil).
func (s *scanner) strPtr() (*string, bool) {
	if s.null() {
		return nil, true
	}
	v, ok := s.str()
	return &v, ok
}

// intPtr reads an integer (as a new *int) or null (nil).
func (s *scanner) intPtr() (*int, bool) {
	if s.null() {
		return nil, true
	}
	v, ok := s.int()
	n := int(v)
	return &n, ok
}

// object reads the members of an object, calling member for each key (positioned
// at its value); null is an object without members.
func (s *scanner) object(member func(key []byte) bool) bool {
	if s.null() {
		return true
	}
	if !s.tok('{') {
		return false
	}
	if s.tok('}') {
		return true
	}
	for {
		key, ok := s.raw()
		if !ok || !s.tok(':') || !member(key) {
			return false
		}
		if s.tok('}') {
			return true
		}
		if !s.tok(',') {
			return false
		}
	}
}

// array reads the elements of an array (null: none), calling elem for each.
func (s *scanner) array(elem func() bool) bool {
	if s.null() {
		return true
	}
	if !s.tok('[') {
		return false
	}
	if s.tok(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.tok(']') {
			return true
		}
		if !s.tok(',') {
			return false
		}
	}
}

// strings reads an array of strings; null or [] give an empty (non-nil) or nil slice
// as encoding/json does.
func (s *scanner) strings() ([]string, bool) {
	if s.null() {
		return nil, true
	}
	out := []string{}
	ok := s.array(func() bool {
		v, ok := s.str()
		out = append(out, v)
		return ok
	})
	return out, ok
}

// ints reads an array of integers, as strings does.
func (s *scanner) ints() ([]int64, bool) {
	if s.null() {
		return nil, true
	}
	out := []int64{}
	ok := s.array(func() bool {
		v, ok := s.int()
		out = append(out, v)
		return ok
	})
	return out, ok
}

// scanEvent reads a run item (init, execution_complete, end, ...) whose members are
// the usual scalars and an Execution without results or error; anything else (raw
// results, tracebacks, error payloads) is left to encoding/json.
func scanEvent(b []byte) (wireEvent, bool) {
	var ev wireEvent
	s := scanner{b: b}
	ok := s.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "type":
			ev.Type, ok = s.str()
		case "id":
			ev.ID, ok = s.str()
		case "text":
			ev.Text, ok = s.strPtr()
		case "timestamp":
			ev.Timestamp, ok = s.int()
		case "name":
			ev.Name, ok = s.str()
		case "value":
			ev.Value, ok = s.str()
		case "execution_time_ms":
			ev.TimeMs, ok = s.int()
		case "count":
			ev.Count, ok = s.intPtr()
		case "ok":
			ev.OK, ok = s.bool()
		case "execution":
			if s.null() {
				return true
			}
			var ex wireExecution
			ok = s.execution(&ex)
			ev.Execution = &ex
		}
		return ok
	})
	return ev, ok && s.end()
}

// execution reads the Execution of an end item (bindings/common convert::execution).
func (s *scanner) execution(ex *wireExecution) bool {
	return s.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "id":
			ex.ID, ok = s.strPtr()
		case "exit_code":
			ex.ExitCode, ok = s.intPtr()
		case "execution_count":
			ex.ExecutionCount, ok = s.intPtr()
		case "stdout":
			ex.Stdout, ok = s.strings()
		case "stderr":
			ex.Stderr, ok = s.strings()
		case "stdout_timestamps":
			ex.StdoutTimes, ok = s.ints()
		case "stderr_timestamps":
			ex.StderrTimes, ok = s.ints()
		case "results":
			// Only an empty list: results carry raw maps.
			if !s.null() {
				ex.Results = []wireResult{}
				ok = s.array(func() bool { return false })
			} else {
				ok = true
			}
		case "error":
			ok = s.null()
		case "complete":
			if s.null() {
				return true
			}
			c := &wireEvent{}
			ok = s.object(func(key []byte) bool {
				var ok bool
				switch string(key) {
				case "execution_time_ms":
					c.TimeMs, ok = s.int()
				case "timestamp":
					c.Timestamp, ok = s.int()
				}
				return ok
			})
			ex.Complete = c
		}
		return ok
	})
}

// runStarted is the result of a start op (commands.start, code.start, ...).
type runStarted struct {
	Handle uint64 `json:"handle"`
	ID     string `json:"id"`
}

func scanStarted(b []byte) (runStarted, bool) {
	var r runStarted
	s := scanner{b: b}
	ok := s.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "handle":
			var v int64
			v, ok = s.int()
			ok = ok && v >= 0
			r.Handle = uint64(v)
		case "id":
			r.ID, ok = s.str()
		}
		return ok
	})
	return r, ok && s.end()
}
