package scenarios

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/runner"
)

// TestRedisPyReleaseReplyLostWithATimeout: redis-py-release-reply-lost's
// schedule with redis-py's timeout set (absent: the plan's TTL) instead of
// its default None is valid, as the row's what says from first principles:
// the release whose script never arrived still leaves the key held by
// nobody who can release it, but the key expires a TTL after its SET, so
// the lock is unavailable for at most a TTL (the liveness checker flags
// more than 3×TTL) and clients take it again once the cut heals.
func TestRedisPyReleaseReplyLostWithATimeout(t *testing.T) {
	t.Parallel()
	s, err := Get("redis-py-release-reply-lost")
	if err != nil {
		t.Fatal(err)
	}
	p := s.PlanFor(1)
	spec := *p.Lock.Client // the row's own stays as it is
	spec.Options = json.RawMessage(`{}`)
	p.Lock.Client = &spec
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := runner.Run(ctx, p, runner.Options{Store: t.TempDir(), Expected: &outcome.Expectation{Verdict: checker.Valid}})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if out.Judgement.Verdict != checker.Valid {
		t.Fatalf("with a timeout: %s, want valid (report %s)", out.Judgement.Verdict, out.Dir)
	}
	ops, err := history.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// The schedule did what the row needs: a release lost to the cut, and
	// a grant after the cut healed.
	var cut, healed int64 = -1, -1
	lost, regained := false, false
	for _, o := range ops {
		switch {
		case o.IsNemesis() && o.Fault != nil && o.Fault.Kind == "partition" && o.F == history.Start:
			cut = o.Time
		case o.IsNemesis() && o.Fault != nil && o.Fault.Kind == "partition" && o.F == history.Stop:
			healed = o.Time
		case o.F == history.Release && o.Type == history.Info && cut >= 0 && healed < 0:
			lost = true
		case o.F == history.Acquire && o.Type == history.OK && healed >= 0:
			regained = true
		}
	}
	if !lost || !regained {
		t.Fatalf("release lost in the cut %v, a grant after the heal %v: the schedule did not show the case (report %s)", lost, regained, out.Dir)
	}
}
