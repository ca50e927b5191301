package runner

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/spans"
)

// TestDrawJSON: a draw is written in the plan's style — snake_case names,
// the interval a span as given (relative to the TTL if it was) — and read
// back the same; a draw as hunt.json files held it before it had JSON
// names (Go's field names, the interval in nanoseconds) reads as it meant.
func TestDrawJSON(t *testing.T) {
	d := Draw{Kinds: []nemesis.Kind{nemesis.Kill, nemesis.Kill, nemesis.Partition}, Interval: spans.TTLs(1.5), Concurrency: 3}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"kinds":["kill","kill","partition"],"interval":"1.5ttl","concurrency":3}`; string(b) != want {
		t.Errorf("written %s, want %s", b, want)
	}
	var back Draw
	if err := json.Unmarshal(b, &back); err != nil || !slices.Equal(back.Kinds, d.Kinds) || back.Interval.String() != "1.5ttl" || back.Concurrency != 3 {
		t.Errorf("read back %+v (%v)", back, err)
	}
	for in, want := range map[string]Draw{
		`{"Kinds":["kill"],"Interval":0,"Concurrency":2}`:             {Kinds: []nemesis.Kind{nemesis.Kill}, Concurrency: 2},
		`{"Kinds":["latency"],"Interval":2500000000,"Concurrency":1}`: {Kinds: []nemesis.Kind{nemesis.Latency}, Interval: spans.Fixed(2500 * time.Millisecond), Concurrency: 1},
		`{"kinds":["pause"],"interval":"0.5ttl"}`:                     {Kinds: []nemesis.Kind{nemesis.Pause}, Interval: spans.TTLs(0.5)},
		`{}`: {},
	} {
		var got Draw
		if err := json.Unmarshal([]byte(in), &got); err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if !slices.Equal(got.Kinds, want.Kinds) || got.Interval.Resolve(time.Second) != want.Interval.Resolve(time.Second) || got.Concurrency != want.Concurrency {
			t.Errorf("%s read as %+v, want %+v", in, got, want)
		}
	}
	var bad Draw
	if err := json.Unmarshal([]byte(`{"kinds":["kill"],"interval":"soon"}`), &bad); err == nil || !strings.Contains(err.Error(), "draw interval") {
		t.Errorf("an interval that is no span: %v", err)
	}
	// The one default: filled by Normalize, and by WithDrawnFaults through it.
	if n := (Draw{Kinds: d.Kinds}).Normalize(); n.Concurrency != DefaultConcurrency {
		t.Errorf("normalized concurrency %d", n.Concurrency)
	}
	if n := (Draw{Concurrency: 1}).Normalize(); n.Concurrency != 1 {
		t.Errorf("a concurrency given is kept: %d", n.Concurrency)
	}
}

// TestDrawRelativeInterval: an interval relative to the TTL draws the
// schedule the same absolute interval draws.
func TestDrawRelativeInterval(t *testing.T) {
	p := drawPlan(t, "single", 2) // TTL 1 s
	rel, err := p.WithDrawnFaults(3, Draw{Kinds: []nemesis.Kind{nemesis.Kill, nemesis.Partition}, Interval: spans.TTLs(2)})
	if err != nil {
		t.Fatal(err)
	}
	abs, err := p.WithDrawnFaults(3, Draw{Kinds: []nemesis.Kind{nemesis.Kill, nemesis.Partition}, Interval: spans.Fixed(2 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(rel.Faults)
	b, _ := json.Marshal(abs.Faults)
	if string(a) != string(b) || len(rel.Faults) == 0 {
		t.Errorf("2ttl drew\n%s\n2s drew\n%s", a, b)
	}
}
