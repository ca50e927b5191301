package history

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func encodeAll(ops []Op) []byte {
	var b []byte
	for i := range ops {
		b = appendOp(b, &ops[i])
	}
	return b
}

func TestDecodeRoundTrip(t *testing.T) {
	want := sampleOps()
	got, err := Decode(bytes.NewReader(encodeAll(want)))
	if err != nil {
		t.Fatal(err)
	}
	// Each invalid UTF-8 byte comes back as U+FFFD, as with encoding/json.
	want[6].Value = "é\u2028\u2029\ufffd\ufffd€"
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
}

func TestDecodeRejectsMalformedLines(t *testing.T) {
	good := `{"index":0,"process":0,"client":0,"type":"invoke","f":"acquire","key":"k","time":1}`
	for _, tc := range []struct {
		name, text string
		line       int
		reason     string
	}{
		{"not json", good + "\nhello\n", 2, "invalid character"},
		{"unknown field", `{"index":0,"process":0,"client":0,"type":"ok","f":"acquire","vaild_until":5,"time":1}` + "\n", 1, `unknown field "vaild_until"`},
		{"bad type", `{"index":0,"process":0,"client":0,"type":"done","f":"acquire","time":1}` + "\n", 1, `unknown type "done"`},
		{"missing f", `{"index":0,"process":0,"client":0,"type":"ok","time":1}` + "\n", 1, `missing "f"`},
		{"negative time", `{"index":0,"process":0,"client":0,"type":"ok","f":"read","time":-4}` + "\n", 1, "negative time"},
		{"bad process", `{"index":0,"process":"x","client":0,"type":"ok","f":"read","time":4}` + "\n", 1, "process must be"},
		{"fractional index", `{"index":0.5,"process":0,"client":0,"type":"ok","f":"read","time":4}` + "\n", 1, "index"},
		{"index goes back", good + "\n" + good + "\n", 2, `index 0 (invoke acquire of process 0 on key "k") does not follow index 0`},
		{"trailing data", good + ` {}` + "\n", 1, "unexpected data after the op"},
		{"nemesis without fault", `{"index":0,"process":"nemesis","client":0,"type":"info","f":"start","time":4}` + "\n", 1, "without a fault id"},
		{"client with fault", `{"index":0,"process":1,"client":1,"type":"info","f":"start","time":4,"fault":{"id":"f1","kind":"k","desc":""}}` + "\n", 1, "carries a fault"},
		{"array", "[]\n", 1, "cannot unmarshal array"},
		{"null", "null\n", 1, `missing "type"`},
		{"wrong field type", `{"index":0,"process":0,"client":0,"type":"ok","f":"read","time":"1"}` + "\n", 1, "time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops, err := Decode(strings.NewReader(tc.text))
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("got %v (%T), want a *LineError", err, err)
			}
			if le.Line != tc.line || !strings.Contains(le.Reason, tc.reason) {
				t.Fatalf("got line %d %q, want line %d containing %q", le.Line, le.Reason, tc.line, tc.reason)
			}
			if ops != nil {
				t.Fatalf("a malformed history returned %d ops", len(ops))
			}
		})
	}
}

func TestDecodeTruncatedLastLine(t *testing.T) {
	n := len(sampleOps())
	full := encodeAll(sampleOps())
	lastStart := bytes.LastIndexByte(full[:len(full)-1], '\n') + 1
	for cut := lastStart + 1; cut < len(full)-1; cut++ {
		ops, err := Decode(bytes.NewReader(full[:cut]))
		var te *TruncatedError
		if !errors.As(err, &te) {
			t.Fatalf("cut at %d: got %v, want *TruncatedError", cut, err)
		}
		if te.Line != n || len(ops) != n-1 || ops[n-2].Index != int64(n-2) {
			t.Fatalf("cut at %d: line %d, %d ops", cut, te.Line, len(ops))
		}
	}
	// A complete last op that only lacks its newline is complete.
	ops, err := Decode(bytes.NewReader(full[:len(full)-1]))
	if err != nil || len(ops) != n {
		t.Fatalf("missing final newline only: %d ops, %v", len(ops), err)
	}
	// Garbage in the middle is not truncation even when the file is cut too.
	bad := append(append([]byte{}, full[:lastStart]...), "oops\n"...)
	bad = append(bad, full[lastStart:lastStart+10]...)
	if _, err := Decode(bytes.NewReader(bad)); !errors.As(err, new(*LineError)) {
		t.Fatalf("garbage line before a cut: %v", err)
	}
}

func TestDecodeBlankLinesAndLongLines(t *testing.T) {
	ops := sampleOps()[:2]
	ops[1].Value = strings.Repeat("v", 600<<10) // longer than the read buffer
	text := append([]byte("\n  \n"), encodeAll(ops)...)
	text = append(text, "\n\t\n"...)
	got, err := Decode(bytes.NewReader(text))
	if err != nil || !reflect.DeepEqual(got, ops) {
		t.Fatalf("got %d ops, %v", len(got), err)
	}
}

func TestDecodeRejectsHugeLine(t *testing.T) {
	text := `{"index":0,"process":0,"client":0,"type":"ok","f":"read","time":4,"value":"` + strings.Repeat("x", MaxLineBytes) + "\"}\n"
	_, err := Decode(strings.NewReader(text))
	var le *LineError
	if !errors.As(err, &le) || !strings.Contains(le.Reason, "longer than") {
		t.Fatalf("got %v", err)
	}
}

func TestReadFileMissing(t *testing.T) {
	if _, err := ReadFile(t.TempDir() + "/nope.jsonl"); err == nil || !strings.Contains(err.Error(), "nope.jsonl") {
		t.Fatalf("got %v", err)
	}
}

// FuzzRead: Decode never panics, and whatever it accepts survives a round
// trip through the encoder unchanged.
func FuzzRead(f *testing.F) {
	f.Add(encodeAll(sampleOps()))
	full := encodeAll(sampleOps())
	f.Add(full[:len(full)-7])
	f.Add([]byte(`{"index":0,"process":"nemesis","client":0,"type":"invoke","f":"start","time":3,"fault":{"id":"f1","kind":"kill","targets":["n1"],"desc":"kill n1"}}` + "\n"))
	f.Add([]byte("\n\n{}\n"))
	f.Add([]byte(`{"index":1e3,"process":1,"client":1,"type":"ok","f":"x","time":0}`))
	f.Add([]byte(`{"index":0,"process":0,"client":0,"type":"ok","f":"a","time":1,"key":"\u0000\ud800"}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ops, err := Decode(bytes.NewReader(data))
		var te *TruncatedError
		if err != nil && !errors.As(err, &te) {
			if ops != nil {
				t.Fatalf("error %v with %d ops", err, len(ops))
			}
			return
		}
		for i, op := range ops {
			if verr := op.Validate(); verr != nil {
				t.Fatalf("accepted invalid op %d: %v", i, verr)
			}
		}
		again, err := Decode(bytes.NewReader(encodeAll(ops)))
		if err != nil {
			t.Fatalf("re-reading accepted ops: %v", err)
		}
		if len(again) != len(ops) || (len(ops) > 0 && !reflect.DeepEqual(again, ops)) {
			t.Fatalf("round trip changed the ops:\n%+v\n%+v", ops, again)
		}
	})
}

// TestLineOf: the line of an op in a file, blank lines counted, so an
// error about an op can name where it is.
func TestLineOf(t *testing.T) {
	ops := sampleOps()
	text := append([]byte("\n  \n"), encodeAll(ops[:3])...)
	text = append(text, "\n"...)
	text = append(text, encodeAll(ops[3:])...)
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	for index, want := range map[int64]int{0: 3, 2: 5, 3: 7, 6: 10, 99: 0} {
		if got, err := LineOf(path, index); err != nil || got != want {
			t.Errorf("LineOf(%d) = %d, %v; want %d", index, got, err, want)
		}
	}
	if _, err := LineOf(filepath.Join(t.TempDir(), "none"), 0); err == nil {
		t.Error("LineOf of a missing file succeeded")
	}
}

func TestSummary(t *testing.T) {
	ops := sampleOps()
	for i, want := range map[int]string{
		1: `ok acquire of process 0 on key "k"`,
		3: "invoke nemesis start of fault f2",
		5: "nemesis start of fault f3",
	} {
		if got := ops[i].Summary(); got != want {
			t.Errorf("op %d: %q, want %q", i, got, want)
		}
	}
}
