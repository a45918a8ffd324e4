package opensandbox

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// The reflection-free codec of the hot path gives exactly what encoding/json gives.

func TestAppendArgsMatchesEncodingJSON(t *testing.T) {
	cases := []map[string]any{
		{},
		{"paths": []string{"/tmp/a b", "/tmp/\"q\"\\", "/tmp/\u00e9\u4e16\U0001F600", "ctl\x01\n\t\r"}, "sandbox": uint64(1 << 60)},
		{"path": "/x", "mode": 644, "size": int64(-3), "handlers": true, "skip": false, "none": nil},
		{"paths": []string(nil), "empty": []string{}, "html": "<a href=\"x\">&</a>"},
	}
	for _, args := range cases {
		got, ok := appendArgs(nil, args)
		if !ok {
			t.Fatalf("%v: not encoded", args)
		}
		if got[len(got)-1] != 0 {
			t.Fatalf("%v: no NUL at the end", args)
		}
		want, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		if err := json.Unmarshal(got[:len(got)-1], &a); err != nil {
			t.Fatalf("%q: %v", got, err)
		}
		if err := json.Unmarshal(want, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("got %s, encoding/json %s", got, want)
		}
	}
	// Other value types and invalid UTF-8 are left to encoding/json.
	for _, args := range []map[string]any{
		{"entries": []map[string]any{{"path": "/x"}}},
		{"ratio": 1.5},
		{"path": "bad\xff"},
	} {
		if _, ok := appendArgs(nil, args); ok {
			t.Fatalf("%v: encoded without encoding/json", args)
		}
		bp, err := encodeArgs(args)
		if err != nil {
			t.Fatal(err)
		}
		b := *bp
		want, _ := json.Marshal(args)
		if !bytes.Equal(b[:len(b)-1], want) || b[len(b)-1] != 0 {
			t.Fatalf("fallback gave %q, want %q", b, want)
		}
		putArgs(bp)
	}
}

func TestDecodeResultMatchesEncodingJSON(t *testing.T) {
	entry := `{"path":"/tmp/a","type":"file","mode":644,"owner":"root","group":"root","size":12,` +
		`"modified_at":"2026-12-03T17:53:26.123456789+00:00","created_at":"2026-12-03T19:53:26+02:00"}`
	nulls := `{"path":"/tmp/b","type":null,"mode":755,"owner":null,"group":"g","size":0,"modified_at":null,"created_at":null}`
	maps := []string{
		`{"/tmp/a":` + entry + `}`,
		" { \"/tmp/a\" : " + entry + " , \"/tmp/b\":" + nulls + " } \n",
		`{}`,
		`{"/tmp/a":{}}`,
		// Fallbacks: an escape, an unknown key, a fraction, a bad time, not an object.
		`{"/tmp/\"a\"":` + entry + `}`,
		`{"/tmp/a":{"path":"/tmp/a","extra":1}}`,
		`{"/tmp/a":{"size":1.5}}`,
		`{"/tmp/a":{"modified_at":"yesterday"}}`,
		`null`,
		`{"/tmp/a":` + entry + `} x`,
	}
	for _, in := range maps {
		got := map[string]FileInfo{"kept": {Path: "kept"}}
		want := map[string]FileInfo{"kept": {Path: "kept"}}
		gerr := decodeResult([]byte(in), &got)
		werr := json.Unmarshal([]byte(in), &want)
		if (gerr == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %v %v\nwant %v %v", in, got, gerr, want, werr)
		}
	}
	lists := []string{
		`[` + entry + `,` + nulls + `]`,
		`[]`,
		`null`,
		` [ ` + entry + ` ] `,
		`[{"path":"\u00e9"}]`,
		`[` + entry + `,]`,
	}
	for _, in := range lists {
		var got, want []FileInfo
		gerr := decodeResult([]byte(in), &got)
		werr := json.Unmarshal([]byte(in), &want)
		if (gerr == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %#v %v\nwant %#v %v", in, got, gerr, want, werr)
		}
	}
	// The fast path itself takes the usual shapes (the cases above would also pass
	// through encoding/json alone).
	if _, ok := scanFileInfoMap([]byte(maps[1])); !ok {
		t.Fatal("a get_file_info result was not read by the fast path")
	}
	if _, ok := scanFileInfoList([]byte(lists[0])); !ok {
		t.Fatal("a list_directory result was not read by the fast path")
	}
	if _, ok := scanFileInfoMap([]byte(strings.Replace(maps[0], "root", "r\\u00f6ot", 1))); ok {
		t.Fatal("an escaped string was read by the fast path")
	}
}

func BenchmarkDecodeFileInfo(b *testing.B) {
	in := []byte(`{"/tmp/bench/small.txt":{"path":"/tmp/bench/small.txt","type":"file","mode":644,"owner":"root","group":"root","size":1,"modified_at":"2026-12-03T17:53:26.123456789+00:00","created_at":"2026-12-03T17:53:26.123456789+00:00"}}`)
	b.Run("fast", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			out := map[string]FileInfo{}
			if err := decodeResult(in, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			out := map[string]FileInfo{}
			if err := json.Unmarshal(in, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkEncodeArgs(b *testing.B) {
	args := map[string]any{"paths": []string{"/tmp/bench/small.txt"}, "sandbox": uint64(1)}
	b.Run("fast", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			bp, err := encodeArgs(args)
			if err != nil {
				b.Fatal(err)
			}
			putArgs(bp)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := json.Marshal(args); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestScanEventMatchesEncodingJSON(t *testing.T) {
	items := []string{
		`{"type":"end","ok":true,"execution":{"id":"6f1c","exit_code":0,"stdout":[],"stderr":[],"stdout_timestamps":[],"stderr_timestamps":[],"results":[],"error":null,"complete":{"execution_time_ms":3,"timestamp":1764784406123},"execution_count":null}}`,
		`{"type":"end","ok":true,"execution":{"id":null,"exit_code":null,"stdout":["a","b c"],"stderr":["e"],"stdout_timestamps":[1,2],"stderr_timestamps":[-3],"results":[],"error":null,"complete":null,"execution_count":7}}`,
		`{"type":"end","ok":true,"execution":null}`,
		`{"type":"init","id":"abc","timestamp":17}`,
		`{"type":"execution_complete","timestamp":17,"execution_time_ms":4}`,
		`{"type":"execution_count","count":3,"timestamp":1}`,
		`{"type":"stdout","text":null,"timestamp":1}`,
		` { "type" : "stdout" , "text" : "x y" , "timestamp" : 1 } `,
		// Fallbacks: error payloads, results, tracebacks, escapes, extra members.
		`{"type":"end","ok":false,"error":{"kind":"cancelled","status":null,"code":null,"message":"m","request_id":null,"operation":"x"}}`,
		`{"type":"end","ok":true,"execution":{"results":[{"text":"1","timestamp":1,"raw":{"text/plain":"1"}}]}}`,
		`{"type":"error","name":"E","value":"v","traceback":["t"],"timestamp":1}`,
		`{"type":"stdout","text":"a\"b","timestamp":1}`,
		`{"type":"end","ok":true,"execution":{"id":"x","stdout_digest":"abc"}}`,
		`{"type":"result","raw":{"text/plain":"1"},"timestamp":1}`,
	}
	for i, in := range items {
		var want wireEvent
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		got, ok := scanEvent([]byte(in))
		if i < 8 && !ok {
			t.Fatalf("%s: not read by the fast path", in)
		}
		if i >= 8 && ok {
			t.Fatalf("%s: read by the fast path", in)
		}
		if ok && !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n got %+v\nwant %+v", in, got, want)
		}
		// Through the batch decoder (fast path or not) the same event comes out.
		var b itemBatch
		buf := append([]byte{0, itemJSON}, make([]byte, 12)...)
		buf[10] = byte(len(in))
		if err := b.decode(append(buf, in...)); err != nil || len(b.Events) != 1 || !reflect.DeepEqual(b.Events[0], want) {
			t.Fatalf("%s: batch gave %+v %v", in, b.Events, err)
		}
	}
	var st runStarted
	if err := decodeResult([]byte(`{"handle":12,"id":"6f1c"}`), &st); err != nil || st != (runStarted{12, "6f1c"}) {
		t.Fatalf("started %+v %v", st, err)
	}
	if _, ok := scanStarted([]byte(`{"handle":-1,"id":"x"}`)); ok {
		t.Fatal("a negative handle was read by the fast path")
	}
}

func BenchmarkDecodeEndItem(b *testing.B) {
	in := []byte(`{"type":"end","ok":true,"execution":{"id":"6f1c2a3e-1111-2222-3333-444455556666","exit_code":0,"stdout":[],"stderr":[],"stdout_timestamps":[],"stderr_timestamps":[],"results":[],"error":null,"complete":{"execution_time_ms":3,"timestamp":1764784406123},"execution_count":null}}`)
	b.Run("fast", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, ok := scanEvent(in); !ok {
				b.Fatal("not read")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var ev wireEvent
			if err := json.Unmarshal(in, &ev); err != nil {
				b.Fatal(err)
			}
		}
	})
}
