package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"
)

// sampleOps covers every field, both process kinds and strings that need
// escaping.
func sampleOps() []Op {
	return []Op{
		{Index: 0, Process: 0, Client: 0, Type: Invoke, F: Acquire, Key: "k", Time: 1},
		{Index: 1, Process: 0, Client: 0, Type: OK, F: Acquire, Key: "k", Value: "owner-1", Token: 7, ValidUntil: 900_000_000, Time: 55_000},
		{Index: 2, Process: 12, Client: 3, Type: Info, F: Write, Key: "k", Value: "41", Token: 7, Time: 60_000, Error: "read tcp 127.0.0.1:6379: i/o timeout"},
		{Index: 3, Process: NemesisProcess, Type: Invoke, F: Start, Value: "kill n2", Time: 61_000,
			Fault: &Fault{ID: "f2", Kind: "kill", Targets: []string{"n2", "n3"}, Desc: "kill n2, restart empty",
				Traits: TraitSet{TouchesNode, RestartsNode}, Lease: []string{"n2", "n4"}, Empty: true, Offset: -1_500_000_000, Rate: 1.5, CutReplication: true}},
		{Index: 4, Process: NemesisProcess, Type: OK, F: Stop, Time: 62_000, Fault: &Fault{ID: "f2", Kind: "kill", Desc: ""}},
		{Index: 5, Process: NemesisProcess, Type: Info, F: Start, Time: 62_500, Fault: &Fault{ID: "f3", Kind: "step-pause", Targets: []string{"client:0"}, Desc: "arm", Traits: TraitSet{StopsClient, ArmsStep}}},
		{Index: 6, Process: 1, Client: 1, Type: Fail, F: Write, Key: "k\"<&>\\\n\t\b\f\r\x01\x7f", Value: "é\u2028\u2029\xff\xfe€", Time: 63_000, Error: "ü"},
		{Index: 7, Process: 2, Client: 2, Type: OK, F: Acquire, Key: "k", Value: "owner-2", Mode: ModeRead, ValidUntil: 5, Time: 64_000},
		{Index: 8, Process: 3, Client: 3, Type: Fail, F: Acquire, Key: "k", Time: 65_000, Error: "lock not obtained: held by another owner", Held: true},
	}
}

func TestAppendOpMatchesEncodingJSON(t *testing.T) {
	// Every field of an op and of its fault is set in some sample: a field
	// added to Op or Fault and forgotten by appendOp is lost from every
	// stored history (the arming flag was once, so re-analysis could not
	// tell an idle step-pause).
	set := map[string]bool{}
	for _, op := range sampleOps() {
		for _, v := range []reflect.Value{reflect.ValueOf(op), reflect.ValueOf(op.Fault)} {
			if v.Kind() == reflect.Pointer {
				if v.IsNil() {
					continue
				}
				v = v.Elem()
			}
			for i := range v.NumField() {
				if !v.Field(i).IsZero() {
					set[v.Type().Name()+"."+v.Type().Field(i).Name] = true
				}
			}
		}
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[Op](), reflect.TypeFor[Fault]()} {
		for i := range typ.NumField() {
			if name := typ.Name() + "." + typ.Field(i).Name; !set[name] {
				t.Errorf("no sample op sets %s: appendOp is not checked on it", name)
			}
		}
	}
	for _, op := range sampleOps() {
		want, err := json.Marshal(op)
		if err != nil {
			t.Fatal(err)
		}
		got := appendOp(nil, &op)
		if !bytes.Equal(got, append(want, '\n')) {
			t.Errorf("appendOp differs from encoding/json\n got %s\nwant %s", got, want)
		}
	}
}

func TestRecorderConcurrentIndexesFileAndObserver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	var seen []int64
	rec, err := CreateFile(path, RecorderOptions{
		KeepOps: true,
		Observe: func(op Op) { seen = append(seen, op.Index) }, // runs under the recorder's lock
	})
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				op := Op{Process: Process(w), Client: w, Type: Invoke, F: Acquire, Key: "k", Time: int64(i)}
				if _, err := rec.Record(op); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	kept := rec.Ops()
	if len(kept) != workers*each {
		t.Fatalf("kept %d ops, want %d", len(kept), workers*each)
	}
	for i, op := range kept {
		if op.Index != int64(i) || seen[i] != int64(i) {
			t.Fatalf("op %d has index %d, observer saw %d", i, op.Index, seen[i])
		}
	}
	fromFile, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromFile, kept) {
		t.Fatal("file and kept ops differ")
	}
	// Per worker, arrival order is program order.
	last := map[Process]int64{}
	for _, op := range kept {
		if l, ok := last[op.Process]; ok && op.Time != l+1 {
			t.Fatalf("process %d: time %d after %d", op.Process, op.Time, l)
		}
		last[op.Process] = op.Time
	}
}

func TestRecorderFlushesWithoutClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	rec, err := CreateFile(path, RecorderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	if _, err := rec.Record(Op{Type: Invoke, F: Acquire, Key: "k"}); err != nil {
		t.Fatal(err)
	}
	// Flushed every 100 ms; 5 s is a generous bound on a loaded machine.
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.HasSuffix(b, []byte("\n")) {
			ops, err := Decode(bytes.NewReader(b))
			if err != nil || len(ops) != 1 || ops[0].F != Acquire {
				t.Fatalf("flushed file: %v %v", ops, err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the recorded op never reached the file before Close")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	w.n++
	return 0, errors.New("disk full")
}

func TestRecorderReportsWriteErrors(t *testing.T) {
	w := &failingWriter{}
	rec := NewRecorder(w, RecorderOptions{KeepOps: true})
	if _, err := rec.Record(Op{Type: Invoke, F: Acquire}); err != nil {
		t.Fatalf("first record: %v", err)
	}
	if err := rec.Flush(); err == nil {
		t.Fatal("Flush hid the write error")
	}
	op, err := rec.Record(Op{Type: OK, F: Acquire})
	if err == nil {
		t.Fatal("Record after a failed write returned no error")
	}
	if op.Index != 1 || len(rec.Ops()) != 2 {
		t.Fatalf("the op must still be recorded in memory: index %d, %d kept", op.Index, len(rec.Ops()))
	}
	if err := rec.Close(); err == nil {
		t.Fatal("Close hid the write error")
	}
	if _, err := rec.Record(Op{Type: OK, F: Acquire}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Record after Close: %v, want ErrClosed", err)
	}
	if err := rec.Close(); err == nil {
		t.Fatal("a second Close forgot the error")
	}
}

func TestRecorderOpsIsACopy(t *testing.T) {
	rec := NewRecorder(nil, RecorderOptions{KeepOps: true})
	defer rec.Close()
	for i := range keepChunk + 10 { // more than one chunk
		rec.Record(Op{Type: Invoke, F: Acquire, Key: "a", Time: int64(i)})
	}
	snap := rec.Ops()
	snap[0].Key = "changed"
	rec.Record(Op{Type: Invoke, F: Acquire, Key: "b"})
	got := rec.Ops()
	if len(snap) != keepChunk+10 || len(got) != keepChunk+11 || got[0].Key != "a" || got[keepChunk+10].Key != "b" {
		t.Fatalf("snapshot %d ops, now %d: %+v %+v", len(snap), len(got), got[0], got[len(got)-1])
	}
	for i, op := range got {
		if op.Index != int64(i) {
			t.Fatalf("op %d has index %d", i, op.Index)
		}
	}
	if rec.Len() != keepChunk+11 {
		t.Fatalf("Len = %d", rec.Len())
	}
	plain := NewRecorder(nil, RecorderOptions{})
	defer plain.Close()
	plain.Record(Op{Type: Invoke, F: Acquire, Key: "a"})
	if ops := plain.Ops(); ops != nil {
		t.Fatalf("ops kept without KeepOps: %d", len(ops))
	}
}

func TestTracker(t *testing.T) {
	tr := NewTracker()
	rec := NewRecorder(nil, RecorderOptions{Observe: tr.Observe})
	defer rec.Close()
	for _, op := range []Op{
		{Process: 1, Client: 1, Type: Invoke, F: Acquire, Key: "k"},
		{Process: 1, Client: 1, Type: OK, F: Acquire, Key: "k", ValidUntil: 100, Time: 10, Token: 3},
		{Process: 2, Client: 2, Type: Invoke, F: Acquire, Key: "j"},
		{Process: 2, Client: 2, Type: OK, F: Acquire, Key: "j", ValidUntil: 50, Time: 11},
		{Process: 1, Client: 1, Type: OK, F: Extend, Key: "k", ValidUntil: 300, Time: 90},
		{Process: 3, Client: 3, Type: Invoke, F: Release, Key: "k"}, // not the holder
		{Process: NemesisProcess, Type: Invoke, F: Start, Fault: &Fault{ID: "f1", Kind: "pause"}},
		{Process: 2, Client: 2, Type: Info, F: Crash},
	} {
		if _, err := rec.Record(op); err != nil {
			t.Fatal(err)
		}
	}
	h, ok := tr.Holder("k")
	if !ok || h.Client != 1 || h.ValidUntil != 300 || h.Since != 10 || h.Token != 3 || h.Index != 1 {
		t.Fatalf("holder of k = %+v %v", h, ok)
	}
	if _, ok := tr.Holder("j"); ok {
		t.Fatal("a crashed client still holds j")
	}
	if f := tr.ActiveFaults(); len(f) != 1 || f[0].ID != "f1" {
		t.Fatalf("active faults %+v", f)
	}
	rec.Record(Op{Process: 1, Client: 1, Type: Invoke, F: Release, Key: "k"})
	rec.Record(Op{Process: NemesisProcess, Type: OK, F: Stop, Fault: &Fault{ID: "f1"}})
	if _, ok := tr.Holder("k"); ok {
		t.Fatal("k still held after its holder's release")
	}
	if f := tr.ActiveFaults(); len(f) != 0 {
		t.Fatalf("stopped fault still active: %+v", f)
	}
	c := tr.Counts()
	if c[Acquire] != (TypeCounts{Invoke: 2, OK: 2}) || c[Release].Invoke != 2 || c[Crash].Info != 1 {
		t.Fatalf("counts %+v", c)
	}
}

func BenchmarkRecord(b *testing.B) {
	rec := NewRecorder(discardCounter{}, RecorderOptions{})
	defer rec.Close()
	op := Op{Process: 3, Client: 3, Type: OK, F: Acquire, Key: "lock-1", Value: "c3-000123", Token: 42, ValidUntil: 4_900_000_000, Time: 4_210_000_000}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := rec.Record(op); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkRecordKeep(b *testing.B) {
	tr := NewTracker()
	rec := NewRecorder(discardCounter{}, RecorderOptions{KeepOps: true, Observe: tr.Observe})
	defer rec.Close()
	op := Op{Process: 3, Client: 3, Type: OK, F: Acquire, Key: "lock-1", Value: "c3-000123", Token: 42, ValidUntil: 4_900_000_000, Time: 4_210_000_000}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := rec.Record(op); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkJSONMarshal is the baseline appendOp is measured against.
func BenchmarkJSONMarshal(b *testing.B) {
	op := Op{Process: 3, Client: 3, Type: OK, F: Acquire, Key: "lock-1", Value: "c3-000123", Token: 42, ValidUntil: 4_900_000_000, Time: 4_210_000_000}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(op); err != nil {
			b.Fatal(err)
		}
	}
}

type discardCounter struct{}

func (discardCounter) Write(p []byte) (int, error) { return len(p), nil }
