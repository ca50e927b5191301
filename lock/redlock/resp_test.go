package redlock

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/single"
)

func TestParseReply(t *testing.T) {
	cases := []struct {
		in   string
		want reply
	}{
		{"+OK\r\n", reply{kind: '+', str: []byte("OK")}},
		{"-NOSCRIPT No matching script\r\n", reply{kind: '-', str: []byte("NOSCRIPT No matching script")}},
		{":1\r\n", reply{kind: ':', num: 1}},
		{":-7\r\n", reply{kind: ':', num: -7}},
		{"$-1\r\n", reply{kind: '$', null: true}},
		{"$0\r\n\r\n", reply{kind: '$', str: []byte{}}},
		{"$5\r\nab\r\nc\r\n", reply{kind: '$', str: []byte("ab\r\nc")}},
	}
	for _, tc := range cases {
		// Every proper prefix is incomplete, not an error.
		for cut := 0; cut < len(tc.in); cut++ {
			if _, n, err := parseReply([]byte(tc.in[:cut])); n != 0 || err != nil {
				t.Fatalf("%q cut at %d: n = %d, err = %v; want incomplete", tc.in, cut, n, err)
			}
		}
		got, n, err := parseReply([]byte(tc.in + "+NEXT\r\n"))
		if err != nil || n != len(tc.in) {
			t.Fatalf("%q: n = %d, err = %v; want %d, nil", tc.in, n, err, len(tc.in))
		}
		if got.kind != tc.want.kind || got.null != tc.want.null || got.num != tc.want.num || string(got.str) != string(tc.want.str) {
			t.Fatalf("%q: got %+v, want %+v", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"OK\r\n", "+OK\n", "\r\n", ":x\r\n", "$-2\r\n", "$abc\r\n", "$2\r\nabcd\r\n", "*1\r\n:1\r\n", "$999999999\r\n"} {
		if _, _, err := parseReply([]byte(bad)); !errors.Is(err, errProtocol) {
			t.Errorf("%q: err = %v, want a protocol error", bad, err)
		}
	}
	if _, _, err := parseReply([]byte("+" + strings.Repeat("x", maxReply+1))); !errors.Is(err, errProtocol) {
		t.Errorf("an endless line: err = %v, want a protocol error", err)
	}
}

// trickle returns its data a few bytes per Read, then err.
type trickle struct {
	data string
	step int
	err  error
}

func (r *trickle) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p[:min(len(p), r.step)], r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestRespReader(t *testing.T) {
	var stream strings.Builder
	var want []string
	for i := range 300 { // more than the first buffer holds
		s := strings.Repeat("v", i%40)
		stream.WriteString("$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n")
		want = append(want, s)
	}
	for _, step := range []int{1, 3, 4096} {
		src := &trickle{data: stream.String(), step: step, err: io.EOF}
		rd := newRespReader()
		for i, w := range want {
			rep, err := rd.next(src)
			if err != nil || rep.kind != '$' || string(rep.str) != w {
				t.Fatalf("step %d, reply %d: %q %v, want %q", step, i, rep.str, err, w)
			}
		}
		if _, err := rd.next(src); err != io.EOF {
			t.Fatalf("step %d: after the last reply err = %v, want EOF", step, err)
		}
	}
	// Data that comes with an error is used before the error is returned,
	// and a reader resumes after a timeout with the bytes read so far.
	rd := newRespReader()
	src := &trickle{data: ":4", step: 10, err: errTimeout}
	if _, err := rd.next(src); err != errTimeout {
		t.Fatalf("half a reply then a timeout: err = %v", err)
	}
	src.data = "2\r\n"
	if rep, err := rd.next(src); err != nil || rep.num != 42 {
		t.Fatalf("after the timeout: %+v %v, want :42", rep, err)
	}
}

var errTimeout = errors.New("timeout")

func TestEncode(t *testing.T) {
	set := request{op: opSet, key: "k", value: "v1", ttl: 2500 * time.Millisecond}
	if got, want := string(set.encode(nil, false)), "*6\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv1\r\n$2\r\nNX\r\n$2\r\nPX\r\n$4\r\n2500\r\n"; got != want {
		t.Errorf("SET: %q, want %q", got, want)
	}
	rel := request{op: opRelease, key: "k", value: "v1"}
	if got, want := string(rel.encode(nil, false)), "*5\r\n$7\r\nEVALSHA\r\n$40\r\n"+releaseSHA+"\r\n$1\r\n1\r\n$1\r\nk\r\n$2\r\nv1\r\n"; got != want {
		t.Errorf("release: %q, want %q", got, want)
	}
	ext := request{op: opExtend, key: "k", value: "v1", ttl: time.Second}
	if got, want := string(ext.encode(nil, true)), "*6\r\n$4\r\nEVAL\r\n$"+strconv.Itoa(len(single.ExtendLua))+"\r\n"+single.ExtendLua+"\r\n$1\r\n1\r\n$1\r\nk\r\n$2\r\nv1\r\n$4\r\n1000\r\n"; got != want {
		t.Errorf("extend as EVAL: %q, want %q", got, want)
	}
	load := request{op: opLoad, key: single.ReleaseLua}
	if got, want := string(load.encode(nil, false)), "*3\r\n$6\r\nSCRIPT\r\n$4\r\nLOAD\r\n$"+strconv.Itoa(len(single.ReleaseLua))+"\r\n"+single.ReleaseLua+"\r\n"; got != want {
		t.Errorf("SCRIPT LOAD: %q, want %q", got, want)
	}
	// The SHA is the one Redis computes (and go-redis's Script.Hash).
	if releaseSHA != redis.NewScript(single.ReleaseLua).Hash() || extendSHA != redis.NewScript(single.ExtendLua).Hash() {
		t.Fatal("script SHA differs from go-redis's")
	}
}

func TestResult(t *testing.T) {
	set := request{op: opSet, key: "k"}
	rel := request{op: opRelease, key: "k"}
	check := func(name string, req request, rep reply, want func(error) bool) {
		t.Helper()
		err, ok := req.result(rep)
		if !ok || !want(err) {
			t.Errorf("%s: %v (ok %v)", name, err, ok)
		}
	}
	check("SET +OK", set, reply{kind: '+', str: []byte("OK")}, func(err error) bool { return err == nil })
	check("SET nil", set, reply{kind: '$', null: true}, func(err error) bool { return errors.Is(err, redis.Nil) })
	check("SET error", set, reply{kind: '-', str: []byte("READONLY You can't write against a read only replica.")}, func(err error) bool {
		c := lock.Classify(err, lock.ErrNotObtained)
		return errors.Is(c, lock.ErrNotObtained) && !errors.Is(c, lock.ErrUnknown)
	})
	check("release 1", rel, reply{kind: ':', num: 1}, func(err error) bool { return err == nil })
	check("release 0", rel, reply{kind: ':', num: 0}, func(err error) bool { return errors.Is(err, single.ErrNotOwner) })
	check("release error", rel, reply{kind: '-', str: []byte("ERR busy")}, func(err error) bool {
		return errors.Is(err, lock.ErrNotHeld) && !errors.Is(err, single.ErrNotOwner) && !errors.Is(err, lock.ErrUnknown)
	})
	load := request{op: opLoad, key: single.ReleaseLua}
	check("SCRIPT LOAD sha", load, reply{kind: '$', str: []byte(releaseSHA)}, func(err error) bool { return err == nil })
	check("SCRIPT LOAD error", load, reply{kind: '-', str: []byte("ERR scripting disabled")}, func(err error) bool { return err == nil })
	for _, tc := range []struct {
		req request
		rep reply
	}{{load, reply{kind: '+', str: []byte("OK")}}, {set, reply{kind: ':', num: 1}}, {set, reply{kind: '$', str: []byte("x")}}, {rel, reply{kind: '+', str: []byte("OK")}}, {rel, reply{kind: '$', null: true}}} {
		if _, ok := tc.req.result(tc.rep); ok {
			t.Errorf("op %d accepted reply %q: a desynchronised stream must be dropped", tc.req.op, tc.rep.kind)
		}
	}
}

func TestFIFO(t *testing.T) {
	var f fifo
	next, want := 0, 0
	for round := range 50 {
		for range round % 7 {
			f.push(entry{i: next})
			next++
		}
		for range round % 5 {
			if f.n == 0 {
				break
			}
			if e := f.pop(); e.i != want {
				t.Fatalf("popped %d, want %d", e.i, want)
			}
			want++
		}
	}
	for _, e := range f.drain() {
		if e.i != want {
			t.Fatalf("drained %d, want %d", e.i, want)
		}
		want++
	}
	if want != next || f.n != 0 {
		t.Fatalf("%d of %d entries came out, %d left", want, next, f.n)
	}
}
