package protocol

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
)

// TestValidOverTheProtocol: a program that declares it answers the valid
// request (tumbler's single lock served in Go, answering from the validity
// it granted) hands out lock.Validators whose answers come from it — valid
// while held, not valid once the TTL ran out —; the same program without
// the declaration hands out plain Lockers, so nobody asks it.
func TestValidOverTheProtocol(t *testing.T) {
	servers := redistest.Start(t, 1)
	addr := redistest.Addrs(servers)[0]
	ttl := time.Second
	key := locktest.Key(t)

	plain := served(t, addr, key, ttl)
	prim, err := plain.Primitive(key)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := prim.(lock.Validator); ok {
		t.Fatal("a program that does not declare answers_valid handed out a lock.Validator")
	}

	p := served(t, addr, key, ttl, func(c *Config) { c.AnswersValid = true })
	prim, err = p.Primitive(key)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := prim.(lock.Validator)
	if !ok {
		t.Fatalf("a program that declares answers_valid handed out a %T, not a lock.Validator", prim)
	}
	lease, err := v.Acquire(ctxFor(t, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	asked := time.Now()
	ans, err := v.Valid(ctxFor(t, time.Second), lease)
	if err != nil {
		t.Fatalf("valid right after the grant: %v", err)
	}
	if !ans.Valid || ans.Until.IsZero() || ans.Until.After(asked.Add(ttl)) || ans.Until.Before(asked) {
		t.Fatalf("valid right after the grant: %+v, want valid until within the TTL %v of %v", ans, ttl, asked)
	}
	if d := ans.Until.Sub(lease.ValidUntil); d > 20*time.Millisecond || d < -20*time.Millisecond {
		t.Errorf("the Go lock answered valid until %v, %v off the validity it granted (%v)", ans.Until, d, lease.ValidUntil)
	}
	time.Sleep(time.Until(lease.ValidUntil) + 100*time.Millisecond)
	if ans, err = v.Valid(ctxFor(t, time.Second), lease); err != nil || ans.Valid {
		t.Fatalf("valid after the validity ended: %+v, %v; want not valid", ans, err)
	}
	forged := lease
	forged.Value = "nobody's"
	if ans, err = v.Valid(ctxFor(t, time.Second), forged); err != nil || ans.Valid {
		t.Fatalf("valid of a lease the program never granted: %+v, %v; want not valid (its fail)", ans, err)
	}
}

// TestValidDeclaredButUnanswered: a program that declares answers_valid
// but does not answer it (the fake says info) gives an unknown outcome.
func TestValidDeclaredButUnanswered(t *testing.T) {
	v, lease := fakeValidator(t, "good")
	if _, err := v.Valid(ctxFor(t, time.Second), lease); !errors.Is(err, lock.ErrUnknown) || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("valid on a program that does not answer it: %v, want an unknown outcome with its error", err)
	}
}

// TestValidCountsFromTheQuestion: a library's remaining lifetime is
// counted from when it was asked, not from when its answer arrived. The
// library read its clock somewhere between the two, so only the question's
// time never makes the lease outlast what the library said; counted from
// the answer, a slow reply (300 ms here) stretched it by the reply's delay.
func TestValidCountsFromTheQuestion(t *testing.T) {
	v, lease := fakeValidator(t, "slow-valid")
	asked := time.Now()
	ans, err := v.Valid(ctxFor(t, 5*time.Second), lease)
	if err != nil || !ans.Valid {
		t.Fatalf("valid: %+v, %v; want valid", ans, err)
	}
	if left := ans.Until.Sub(asked); left < time.Second || left > time.Second+100*time.Millisecond {
		t.Errorf("valid until %v after the question, want the 1 s the library said (its answer came 300 ms later)", left)
	}
}

// fakeValidator is the fake client in mode, declaring answers_valid, as a
// lock.Validator, with a lease it granted.
func fakeValidator(t *testing.T, mode string) (lock.Validator, lock.Lease) {
	t.Helper()
	p, _ := startFake(t, mode, 0)
	p.cfg.AnswersValid = true
	prim, _ := p.Primitive(fakeKey)
	v := prim.(lock.Validator)
	lease, err := v.Acquire(ctxFor(t, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return v, lease
}

// TestValidReplyChecked: an ok reply to valid must say valid, and its
// remaining lifetime must be neither negative nor left on a lease it says
// is gone.
func TestValidReplyChecked(t *testing.T) {
	id := uint64(4)
	req := Request{Type: TypeValid, ID: id}
	yes, no := true, false
	neg, some := int64(-1), int64(300)
	for _, tc := range []struct {
		rep  Reply
		want string
	}{
		{Reply{InReplyTo: &id, Type: TypeOK}, `without "valid"`},
		{Reply{InReplyTo: &id, Type: TypeOK, Valid: &yes, RemainingMS: &neg}, "negative remaining_ms"},
		{Reply{InReplyTo: &id, Type: TypeOK, Valid: &no, RemainingMS: &some}, "not valid with 300 ms"},
		{Reply{InReplyTo: &id, Type: TypeOK, Valid: &yes, RemainingMS: &some}, ""},
		{Reply{InReplyTo: &id, Type: TypeOK, Valid: &no}, ""},
		{Reply{InReplyTo: &id, Type: TypeFail, Error: "no such lease"}, ""},
	} {
		err := tc.rep.check(req)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v, want it accepted", tc.rep, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want an error saying %q", tc.rep, err, tc.want)
		}
	}
}
