package variants

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
	"github.com/tumbler-dev/tumbler/spans"
)

// TestEveryVariantBuildsAndLocks builds each registered variant on real
// servers and checks that a second owner is refused while the first holds
// (for a semaphore of one permit: a second holder; for a latch: that it
// counts).
func TestEveryVariantBuildsAndLocks(t *testing.T) {
	servers := redistest.Start(t, 3)
	clients := locktest.Clients(t, redistest.Addrs(servers))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	specs := []Spec{{Options: Options{Variant: "watchdog", Inner: "redlock"}, TTL: time.Second}}
	for _, n := range Names() {
		s := Spec{Options: Options{Variant: n}, TTL: time.Second}
		if s.Kind() == KindSemaphore {
			s.Permits = 1
		}
		specs = append(specs, s)
	}
	for _, s := range specs {
		t.Run(s.Variant+"/"+s.Inner, func(t *testing.T) {
			key := "variants:" + s.Variant + ":" + s.Inner
			pa, err := BuildPrimitive(s, clients, key)
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			pb, err := BuildPrimitive(s, clients, key)
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			if pa.Key() != key {
				t.Fatalf("Key() = %q, want %q", pa.Key(), key)
			}
			switch s.Kind() {
			case KindLock:
				exclusive(ctx, t, pa.(lock.Locker), pb.(lock.Locker))
				if _, err := Build(s, clients, key); err != nil {
					t.Fatalf("Build of a lock: %v", err)
				}
			case KindReadWrite:
				exclusive(ctx, t, pa.(lock.ReadWriteLocker).WriteLock(), pb.(lock.ReadWriteLocker).WriteLock())
			case KindSemaphore:
				a, b := pa.(lock.Semaphore), pb.(lock.Semaphore)
				if _, err := a.TrySetPermits(ctx); err != nil {
					t.Fatal(err)
				}
				exclusive(ctx, t, a, b)
			case KindLatch:
				a := pa.(lock.Latch)
				if _, err := a.TrySetCount(ctx, 1); err != nil {
					t.Fatal(err)
				}
				if n, err := pb.(lock.Latch).Count(ctx); err != nil || n != 1 {
					t.Fatalf("count = %d, %v", n, err)
				}
			default:
				t.Fatalf("unknown kind %q", s.Kind())
			}
			if s.Kind() != KindLock {
				if _, err := Build(s, clients, key); !errors.Is(err, lock.ErrConfig) {
					t.Fatalf("Build of a %s: err = %v, want ErrConfig", s.Kind(), err)
				}
			}
			all := map[string]bool{"redlock": true, "redsync": true, "multi": true, "redisson-redlock": true}
			wantAll := all[s.Variant] || all[s.Inner]
			if s.AllNodes() != wantAll {
				t.Fatalf("AllNodes() = %v, want %v", s.AllNodes(), wantAll)
			}
		})
	}
}

type acqRel interface {
	Acquire(context.Context) (lock.Lease, error)
	Release(context.Context, lock.Lease) error
}

// exclusive: b is refused while a holds, and a's release works.
func exclusive(ctx context.Context, t *testing.T, a, b acqRel) {
	t.Helper()
	la, err := a.Acquire(ctx)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if _, err := b.Acquire(ctx); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("second owner: err = %v, want ErrNotObtained", err)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatalf("release: %v", err)
	}
}

func TestSpecErrorsNameTheProblem(t *testing.T) {
	cases := []struct {
		spec Spec
		want string
	}{
		{Spec{Options: Options{Variant: "nope"}, TTL: time.Second}, "unknown lock \"nope\" (valid: "},
		{Spec{Options: Options{Variant: "single"}}, "ttl 0s must be positive"},
		{Spec{Options: Options{Variant: "watchdog", Inner: "watchdog"}, TTL: time.Second}, "inner cannot be watchdog"},
		{Spec{Options: Options{Variant: "single", Inner: "redlock"}, TTL: time.Second}, "inner applies only to watchdog"},
		{Spec{Options: Options{Variant: "redlock", WaitReplicas: 1}, TTL: time.Second}, "wait_replicas applies only to single and fenced"},
		{Spec{Options: Options{Variant: "redlock", SetNXOnExtend: true}, TTL: time.Second}, "setnx_on_extend applies only to redsync"},
		{Spec{Options: Options{Variant: "semaphore"}, TTL: time.Second}, "permits 0, want at least 1"},
		{Spec{Options: Options{Variant: "single", Permits: 2}, TTL: time.Second}, "permits applies only to semaphores"},
		{Spec{Options: Options{Variant: "single", ThreadWaitTime: spans.Fixed(time.Second)}, TTL: time.Second}, "thread_wait_time applies only to fair"},
		{Spec{Options: Options{Variant: "watchdog", Inner: "latch"}, TTL: time.Second}, "inner latch is a latch, not a lock"},
	}
	for _, c := range cases {
		err := c.spec.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want an error containing %q", c.spec, err, c.want)
		}
	}
	if _, err := Build(Spec{Options: Options{Variant: "single"}, TTL: time.Second}, nil, "k"); !errors.Is(err, lock.ErrConfig) {
		t.Errorf("Build with no clients: err = %v, want ErrConfig", err)
	}
}

// TestRegisterOwnLock: a lock registered from outside is built by name like
// the built-in ones, and a second registration of the name is refused.
func TestRegisterOwnLock(t *testing.T) {
	// The registry is global: a fresh name keeps -count=N honest.
	name := fmt.Sprintf("test-own-%d", time.Now().UnixNano())
	servers := redistest.Start(t, 1)
	c := locktest.Client(t, servers[0].Addr)
	built := 0
	err := Register(Info{Name: name, Doc: "a user's lock"}, func(s Spec, cs []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
		built++
		return Build(Spec{Options: Options{Variant: "single"}, TTL: s.TTL}, cs, key, o...)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := Register(Info{Name: name}, func(Spec, []redis.UniversalClient, string, []lock.Option) (lock.Locker, error) { return nil, nil }); err == nil {
		t.Fatal("a second registration of the same name was accepted")
	}
	if err := Register(Info{Name: name + "-rw", Kind: KindReadWrite}, func(Spec, []redis.UniversalClient, string, []lock.Option) (lock.Locker, error) { return nil, nil }); err == nil {
		t.Fatal("a read-write kind with a Locker build function was accepted")
	}
	if i, err := Lookup(name); err != nil || i.Doc != "a user's lock" {
		t.Fatalf("Lookup = %+v, %v", i, err)
	}
	l, err := Build(Spec{Options: Options{Variant: name}, TTL: time.Second}, []redis.UniversalClient{c}, "own")
	if err != nil || built != 1 {
		t.Fatalf("Build = %v (built %d times)", err, built)
	}
	if _, err := l.Acquire(context.Background()); err != nil {
		t.Fatalf("acquire through the registered lock: %v", err)
	}
}
