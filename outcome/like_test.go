package outcome

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/coverage"
)

// likeRun is an invalid run with a double grant at 2 s that names fault
// f1 (started at 1.5 s) and followed a restart empty and a holder's stop,
// and a stale write at 4 s that followed only the holder's stop.
func likeRun() (*checker.Result, *coverage.Run) {
	res := &checker.Result{Verdict: checker.Invalid,
		Faults: []checker.FaultWindow{{ID: "f1", Start: int64(1500 * time.Millisecond)}},
		Anomalies: []checker.Anomaly{
			{Kind: checker.StaleWrite, At: int64(4 * time.Second), Faults: []string{"f1"}},
			{Kind: checker.DoubleGrant, At: int64(2 * time.Second), Faults: []string{"f1"}},
		}}
	cov := &coverage.Run{Anomalies: []coverage.Followed{
		{Kind: checker.StaleWrite, At: int64(4 * time.Second), Windows: []string{coverage.HolderStopped}},
		{Kind: checker.DoubleGrant, At: int64(2 * time.Second), Windows: []string{coverage.RestartEmpty, coverage.HolderStopped}},
	}}
	return res, cov
}

func TestLikeCounts(t *testing.T) {
	res, cov := likeRun()
	for _, c := range []struct {
		name string
		like Like
		want checker.Kind // the first anomaly that counts, "" for none
	}{
		{"any", Like{}, checker.DoubleGrant},
		{"a kind", Like{Kinds: []checker.Kind{checker.StaleWrite}}, checker.StaleWrite},
		{"a kind not there", Like{Kinds: []checker.Kind{checker.TokenOrder}}, ""},
		{"late enough", Like{After: 500 * time.Millisecond}, checker.DoubleGrant},
		{"too early for the double grant", Like{After: time.Second}, checker.StaleWrite},
		{"too early for both", Like{After: 3 * time.Second}, ""},
		{"after a window it followed", Like{Windows: []string{coverage.RestartEmpty}}, checker.DoubleGrant},
		{"after a window only the stale write followed", Like{Kinds: []checker.Kind{checker.DoubleGrant}, Windows: []string{coverage.ClockPastValidity}}, ""},
	} {
		got := c.like.First(res, cov)
		switch {
		case c.want == "" && got != nil:
			t.Errorf("%s: %s counts, want none", c.name, got.Kind)
		case c.want != "" && (got == nil || got.Kind != c.want):
			t.Errorf("%s: %v counts, want %s", c.name, got, c.want)
		}
	}
	// Without the run's coverage no anomaly follows a window.
	if a := (Like{Windows: []string{coverage.RestartEmpty}}).First(res, nil); a != nil {
		t.Errorf("no coverage: %s counts", a.Kind)
	}
}

func TestLikeFails(t *testing.T) {
	res, cov := likeRun()
	l := Like{Kinds: []checker.Kind{checker.DoubleGrant}}
	if at, ok := l.Fails(res, false, cov); !ok || at != int64(2*time.Second) {
		t.Errorf("fails at %d, %v", at, ok)
	}
	if _, ok := l.Fails(res, true, cov); ok {
		t.Error("an interrupted run fails alike")
	}
	valid := *res
	valid.Verdict = checker.Valid
	if _, ok := l.Fails(&valid, false, cov); ok {
		t.Error("a valid run fails alike")
	}
	if _, ok := l.Fails(nil, false, nil); ok {
		t.Error("an unchecked run fails alike")
	}
}

// TestLikeFind: a find's own Like keeps the hunt's timing, narrows the
// kinds to those that counted and asks for the telling windows its first
// anomaly followed — the restart empty, not the holder's stop.
func TestLikeFind(t *testing.T) {
	res, cov := likeRun()
	got, ok := (Like{After: 100 * time.Millisecond}).Find(res, cov)
	if !ok {
		t.Fatal("no find")
	}
	if !slices.Equal(got.Kinds, []checker.Kind{checker.StaleWrite, checker.DoubleGrant}) || got.After != 100*time.Millisecond ||
		!slices.Equal(got.Windows, []string{coverage.RestartEmpty}) {
		t.Errorf("find's like %+v", got)
	}
	// A find that followed only generic windows asks for none.
	got, _ = (Like{Kinds: []checker.Kind{checker.StaleWrite}}).Find(res, cov)
	if len(got.Windows) != 0 || !slices.Equal(got.Kinds, []checker.Kind{checker.StaleWrite}) {
		t.Errorf("generic find's like %+v", got)
	}
	if _, ok := (Like{Kinds: []checker.Kind{checker.TokenReuse}}).Find(res, cov); ok {
		t.Error("a find without a counting anomaly")
	}
}

func TestLikeValidate(t *testing.T) {
	for _, l := range []Like{
		{Kinds: []checker.Kind{"double-grants"}},
		{After: -time.Second},
		{Windows: []string{"restart-empty-ish"}},
	} {
		if err := l.Validate(); !errors.Is(err, ErrInput) {
			t.Errorf("%+v: %v, want bad input", l, err)
		}
	}
	if err := (Like{Kinds: []checker.Kind{checker.DoubleGrant}, Windows: []string{coverage.RestartEmpty}}).Validate(); err != nil {
		t.Error(err)
	}
}

// TestExpectationLike: a row's expectation counts what its reproduction
// counts.
func TestExpectationLike(t *testing.T) {
	res, _ := likeRun()
	e := Expectation{Verdict: checker.Invalid, Kind: checker.DoubleGrant}
	if a := e.Like().First(res, nil); a == nil || a.Kind != checker.DoubleGrant {
		t.Errorf("row's first %v", a)
	}
	rep := reproduction(e, Facts{Result: res, Faults: true})
	if !rep.Reproduced || rep.FirstAnomaly != int64(2*time.Second) {
		t.Errorf("reproduction %+v", rep)
	}
}
