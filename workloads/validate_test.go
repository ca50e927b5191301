package workloads_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/internal/field"
	"github.com/tumbler-dev/tumbler/spans"
	"github.com/tumbler-dev/tumbler/workloads"
)

// Options.Validate checks what the clients do against the TTL and the
// time limit, naming each field by its path in the workload's options;
// the defaults a Config fills (mode, timeouts, nest) count as given.
func TestOptionsValidateNamesTheField(t *testing.T) {
	good := workloads.Options{Kind: workloads.Mutex, Clients: 3, Keys: 1, Hold: spans.Range{spans.TTLs(0.1), spans.TTLs(0.3)}}
	if err := good.Validate(time.Second, 5*time.Second); err != nil {
		t.Fatalf("good options: %v", err)
	}
	for _, c := range []struct {
		edit  func(*workloads.Options)
		paths []string
		want  string
	}{
		{func(o *workloads.Options) { o.Clients = 0 }, []string{"clients"}, "workload.clients = 0, want 1 to 10000 clients"},
		{func(o *workloads.Options) { o.Kind = "queue" }, []string{"kind"}, `workload.kind: unknown workload kind "queue"`},
		{func(o *workloads.Options) { o.Hold = spans.Range{spans.TTLs(0.3), spans.TTLs(0.1)} }, []string{"hold"}, "workload.hold range [300ms, 100ms] is invalid"},
		{func(o *workloads.Options) {
			o.Kind, o.Latch = workloads.Latch, &workloads.LatchSpec{Count: 0, Counters: 1, Round: spans.Fixed(time.Second)}
		},
			[]string{"latch.count"}, "workload.latch.count = 0, want ≥ 1"},
		{func(o *workloads.Options) {
			o.ClientStart = []spans.Span{spans.Fixed(0), spans.Fixed(-1), spans.Fixed(0)}
		}, []string{"client_start[1]"}, "workload.client_start[1] = -1ns"},
		{func(o *workloads.Options) { o.Keys, o.Rate = 0, -1 }, []string{"keys", "rate"}, "workload.keys = 0, want at least 1\nworkload.rate = -1 ops/s"},
		{func(o *workloads.Options) { o.Retry = "spin" }, []string{"retry"}, `workload.retry "spin" unknown (valid: try, wait)`},
	} {
		o := good
		c.edit(&o)
		err := o.Validate(time.Second, 5*time.Second)
		if err == nil || !strings.Contains(field.Within("workload", err).Error(), c.want) {
			t.Errorf("%+v: %v, want %q", o, err, c.want)
			continue
		}
		var fe *field.Error
		if !errors.As(err, &fe) || fe.Path != c.paths[0] {
			t.Errorf("%+v: %v, want an error of field %s", o, err, c.paths[0])
		}
	}
	// A relative span needs a TTL to resolve against.
	if err := good.Validate(0, 5*time.Second); err == nil || !strings.Contains(err.Error(), "hold range [0.1ttl, 0.3ttl] is relative to the lock's TTL") {
		t.Errorf("no TTL: %v", err)
	}
}

// A client mode flag takes process, in-process and inprocess.
func TestModeFlag(t *testing.T) {
	for in, want := range map[string]workloads.Mode{"process": workloads.Processes, "in-process": workloads.InProcess, "inprocess": workloads.InProcess} {
		var m workloads.Mode
		if err := m.Set(in); err != nil || m != want || m.String() != string(want) {
			t.Errorf("%q: %q, %v", in, m, err)
		}
	}
	var m workloads.Mode
	if err := m.Set("thread"); err == nil || !strings.Contains(err.Error(), "process, inprocess") || m != "" {
		t.Errorf("thread: %v, mode %q", err, m)
	}
}
