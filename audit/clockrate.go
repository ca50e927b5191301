package audit

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/tumbler-dev/tumbler/internal/wait"
)

// rateSpan is how far apart the two TIME readings of a node's clock rate
// are at least: over 250 ms a round trip of a fraction of a millisecond
// measures the rate to a fraction of a percent.
const rateSpan = 250 * time.Millisecond

// clockRate is a node's clock's pace against the auditor's, measured over
// span, within ± err.
type clockRate struct {
	rate, err float64
	span      time.Duration
}

// readRates reads every node's TIME a second time, at least rateSpan after
// its first, and derives the pace of its clock.
func (a *auditor) readRates(ctx context.Context) error {
	if len(a.nodes) == 0 {
		return nil
	}
	if err := wait.For(ctx, rateSpan-time.Since(a.nodes[0].at)); err != nil {
		return err
	}
	for i := range a.nodes {
		n := &a.nodes[i]
		before := time.Now()
		t, err := a.client(n.addr).Time(ctx).Result()
		after := time.Now()
		if err != nil {
			return a.fail(n.name, n.addr, err)
		}
		at := before.Add(after.Sub(before) / 2)
		span := at.Sub(n.at)
		n.rate = clockRate{
			rate: 1 + float64(t.Sub(at)-n.skew)/float64(span),
			err:  float64(n.rtt/2+after.Sub(before)/2+time.Millisecond) / float64(span), // TIME's µs, a round trip each
			span: span,
		}
	}
	return nil
}

// clockRate judges a node's clock's pace: Redis expires keys by it, so a
// clock running fast expires a lock's keys before the TTL has passed on
// the clients' clocks. Redlock's drift factor (1 % by default) is the
// allowance for it: a lease stays safe while TTL/rate ≥ TTL×(1 − 0.01) −
// 2 ms, a pace of at most about 1.01.
func (a *auditor) clockRate(n nodeState, ttl time.Duration) {
	r := n.rate
	if r.span == 0 {
		return
	}
	limit := 1/(1-0.01-float64(2*time.Millisecond)/float64(ttl)) - 1
	setting := fmt.Sprintf("wall clock runs at %.4f× the auditor's (over %v, ±%.2f%%)", r.rate, r.span.Round(time.Millisecond), 100*r.err)
	risky := math.Abs(r.rate-1)-r.err > limit
	why := fmt.Sprintf("Redis expires a key by its own wall clock, so a clock that runs fast expires every lock early; Redlock's drift factor of 1%% allows a pace up to %.4f× at TTL %v, and this clock keeps within it", 1+limit, ttl)
	if risky {
		why = fmt.Sprintf("this clock runs %.2f%% off the auditor's pace, more than the %.2f%% a drift factor of 1%% allows at TTL %v: either clock drifts, and a node whose clock runs fast expires a lock's keys before its holder's validity ends", 100*math.Abs(r.rate-1), 100*limit, ttl)
	}
	a.add(Finding{Check: "clock-rate", Node: n.name, Risky: risky, Setting: setting, Why: why,
		Rows: rows(redlockDriftBeyondFactor, redlockDriftWithinFactor)})
}
