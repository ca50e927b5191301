package coverage

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
)

// view is a run as the windows' judgements read it.
type view struct {
	s     Setup
	ops   []history.Op
	pos   map[int64]int // history index → position in ops
	peer  []int         // history.Partners
	holds []checker.Hold
	// faults are those that took effect, in start order.
	faults    []fault
	anomalies []checker.Anomaly
}

// fault is a fault that took effect, with what the nemesis saw as it
// applied it (its start record's history.Fault).
type fault struct {
	checker.FaultWindow
	seen history.Fault
}

func newView(in Input) *view {
	v := &view{s: in.Setup, ops: in.Ops, pos: map[int64]int{}, peer: history.Partners(in.Ops),
		holds: in.Holds, anomalies: in.Anomalies}
	for i, o := range in.Ops {
		v.pos[o.Index] = i
	}
	fws := in.Faults
	if fws == nil {
		fws = checker.FaultWindows(in.Ops)
	}
	for _, fw := range fws {
		if fw.Idle() != "" {
			continue
		}
		f := fault{FaultWindow: fw}
		if i, ok := v.pos[fw.StartOp]; ok && in.Ops[i].Fault != nil {
			f.seen = *in.Ops[i].Fault
		}
		v.faults = append(v.faults, f)
	}
	return v
}

// followed reports whether an anomaly came during one of reaches or
// within two TTLs after it, or names one of its faults.
func (v *view) followed(reaches []Reach) bool {
	for i := range v.anomalies {
		if v.follows(&v.anomalies[i], reaches) {
			return true
		}
	}
	return false
}

// follows reports whether anomaly a came during one of reaches or within
// two TTLs after it, or names one of its faults: the one rule of "an
// anomaly followed a window" (Result.AnomalyFollowed, Run.Followed).
func (v *view) follows(a *checker.Anomaly, reaches []Reach) bool {
	after := 2 * int64(v.s.TTL)
	for _, r := range reaches {
		if a.At < r.From {
			continue
		}
		if a.At <= r.To+after || sharesAny(a.Faults, r.Faults) {
			return true
		}
	}
	return false
}

func sharesAny(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// nodes are the fault's targets that are data nodes.
func (v *view) nodes(f fault) []string {
	var out []string
	for _, t := range f.Targets {
		if slices.Contains(v.s.Nodes, t) {
			out = append(out, t)
		}
	}
	return out
}

// clients are the clients the fault's targets name ("client:<i>").
func clients(f fault) []int {
	var out []int
	for _, t := range f.Targets {
		var c int
		if _, err := fmt.Sscanf(t, "client:%d", &c); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// failedOverBefore reports whether a failover began before t: the
// topology's roles are no longer known from Setup.
func (v *view) failedOverBefore(t int64) bool {
	for _, f := range v.faults {
		if f.Traits.Has(promoteTraits...) && f.Start < t {
			return true
		}
	}
	return false
}

// cutAt are the nodes partitions cut from the clients at t.
func (v *view) cutAt(t int64) []string {
	var out []string
	for _, f := range v.faults {
		if !f.Traits.Has(cutTraits...) || f.Start > t || f.Stop <= t || len(clients(f)) > 0 {
			continue
		}
		for _, n := range v.nodes(f) {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// leaseNodes are the nodes hold h's lease rests on as f saw it: those the
// nemesis read when f's selector resolved, else (while the topology is as
// it started) Setup.LeaseNodes less those cut from the clients when h was
// granted.
func (v *view) leaseNodes(f fault, h checker.Hold) []string {
	if len(f.seen.Lease) > 0 {
		return f.seen.Lease
	}
	if v.failedOverBefore(h.Start) || v.failedOverBefore(f.Start) {
		return nil
	}
	cut := v.cutAt(h.Start)
	var out []string
	for _, n := range v.s.LeaseNodes {
		if !slices.Contains(cut, n) {
			out = append(out, n)
		}
	}
	return out
}

// onLease finds the first hold f overlaps whose lease rests on a node f
// hit (with ok, which may refuse a pair): the hold and the nodes.
func (v *view) onLease(f fault, ok func(checker.Hold) bool) (checker.Hold, []string, bool) {
	hit := v.nodes(f)
	if len(hit) == 0 {
		return checker.Hold{}, nil, false
	}
	for _, h := range v.holds {
		if h.Start > f.Stop || f.Start > h.End || (ok != nil && !ok(h)) {
			continue
		}
		lease := v.leaseNodes(f, h)
		var on []string
		for _, n := range hit {
			if slices.Contains(lease, n) {
				on = append(on, n)
			}
		}
		if len(on) > 0 {
			return h, on, true
		}
	}
	return checker.Hold{}, nil, false
}

func holdText(h checker.Hold) string {
	return fmt.Sprintf("client %d's lease on %q", h.Client, h.Key)
}

func (v *view) leaseNodeFaults() []Reach {
	var out []Reach
	for _, f := range v.faults {
		if !f.Traits.Has(nodeTraits...) {
			continue
		}
		h, on, ok := v.onLease(f, nil)
		if !ok {
			continue
		}
		out = append(out, Reach{From: max(f.Start, h.Start), To: min(f.Stop, h.End), Faults: []string{f.ID},
			Note: fmt.Sprintf("%s of %s while %s was held", f.Kind, nodesList(on), holdText(h))})
	}
	return out
}

func (v *view) restartsEmpty() []Reach {
	expiry := v.s.TTL - v.s.Validity // what the key outlives the validity by
	var out []Reach
	for _, f := range v.faults {
		if !f.Traits.Has(startTraits...) || !f.seen.Empty || !f.Healed {
			continue
		}
		// Down while the lease was held, back before its key expired.
		h, on, ok := v.onLease(f, func(h checker.Hold) bool {
			return h.Start <= f.Start && f.Start <= h.End && f.Stop < h.ValidUntil+int64(expiry)
		})
		if !ok {
			continue
		}
		out = append(out, Reach{From: f.Start, To: f.Stop, Faults: []string{f.ID},
			Note: fmt.Sprintf("%s of %s came back empty %v before %s expired", f.Kind, nodesList(on),
				time.Duration(h.ValidUntil+int64(expiry)-f.Stop).Round(time.Millisecond), holdText(h))})
	}
	return out
}

// clocksPastValidity: a fault moved the clock of a node of a held lease so
// that the node expires the key before the holder's validity ends — a
// step ahead by more than the validity (Fault.Offset: the key is gone at
// once, whenever in the lease it came), or a drift (Fault.Rate) fast
// enough that the node's clock gains more than the drift allowance (TTL −
// validity) before the validity ends: at a rate r from the lease's start
// the key lives TTL/r, under the validity when r > TTL/validity (the
// catalog's redlock-drift rows). A clock put behind makes keys outlive
// their TTL and is not this window.
func (v *view) clocksPastValidity() []Reach {
	valid := int64(v.s.Validity)
	var out []Reach
	for _, f := range v.faults {
		if !f.Traits.Has(clockTraits...) || f.seen.Offset <= valid && f.seen.Rate <= 1 {
			continue
		}
		if f.seen.Offset > valid {
			h, on, ok := v.onLease(f, nil)
			if !ok {
				continue
			}
			out = append(out, Reach{From: max(f.Start, h.Start), To: min(f.Stop, h.End), Faults: []string{f.ID},
				Note: fmt.Sprintf("%s's clock moved %v (validity %v) while %s was held", nodesList(on),
					time.Duration(f.seen.Offset), v.s.Validity, holdText(h))})
			continue
		}
		h, on, ok := v.onLease(f, func(h checker.Hold) bool {
			_, early := v.earlyExpiry(f, h)
			return early
		})
		if !ok {
			continue
		}
		t, _ := v.earlyExpiry(f, h)
		out = append(out, Reach{From: t, To: min(h.ValidUntil, h.End), Faults: []string{f.ID},
			Note: fmt.Sprintf("%s's clock ran at %g× the host's: the key of %s expired on it %v before the holder's validity ended", nodesList(on),
				f.seen.Rate, holdText(h), time.Duration(h.ValidUntil-t).Round(time.Millisecond))})
	}
	return out
}

// earlyExpiry is when, on the harness's clock, a node whose clock drift f
// runs fast expires the key of hold h, its lease taken a validity before
// h's validity end; true when that comes before the validity ends, while
// the drift runs and the key is held.
func (v *view) earlyExpiry(f fault, h checker.Hold) (int64, bool) {
	r := f.seen.Rate
	if r <= 1 || history.NoExpiry(h.ValidUntil) {
		return 0, false
	}
	s := h.ValidUntil - int64(v.s.Validity) // the lease's start
	a := max(s, f.Start)                    // the drift's gain starts
	// (t − s) + (r − 1)(t − a) = TTL: the node's clock reaches the key's
	// expiry.
	t := int64((float64(v.s.TTL) + float64(s) + (r-1)*float64(a)) / r)
	return t, a < t && t < h.ValidUntil && t <= f.Stop && t < h.End
}

// acquired is when the acquire that began hold h was invoked: its lease
// counts from then ("Time and leases").
func (v *view) acquired(h checker.Hold) int64 {
	i, ok := v.pos[h.AcquireOp]
	if !ok {
		return h.Start
	}
	if j := v.peer[i]; j >= 0 {
		return v.ops[j].Time
	}
	return h.Start
}

func (v *view) holdersStopped() []Reach {
	var out []Reach
	for _, f := range v.faults {
		if !f.Traits.Has(stopTraits...) {
			continue
		}
		cs := clients(f)
		for _, h := range v.holds {
			if !slices.Contains(cs, h.Client) {
				continue
			}
			if history.NoExpiry(h.ValidUntil) {
				if r, ok := v.stoppedPastTTL(f, h); ok {
					out = append(out, r)
					break
				}
				continue
			}
			// Stopped while its lease was valid (an acquire on its way
			// counts), still stopped when it ran out, and not released
			// before.
			if f.Start < v.acquired(h) || f.Start >= h.ValidUntil || f.Effect <= h.ValidUntil || h.HeldUntil < h.ValidUntil {
				continue
			}
			out = append(out, Reach{From: f.Start, To: f.Effect, Faults: []string{f.ID},
				Note: fmt.Sprintf("client %d stopped by %s %v past the validity of its lease on %q", h.Client, f.Kind,
					time.Duration(f.Effect-h.ValidUntil).Round(time.Millisecond), h.Key)})
			break
		}
	}
	return out
}

// stoppedPastTTL is holder-stopped for a lock that exposes no validity:
// its lease is still the key's TTL, which a holder that cannot reach the
// nodes (stopped, or cut off) cannot renew, so the key lapses at most a
// TTL after the fault began. The window is reached when the fault began
// while the lease was held, outlasted the TTL, and the holder still
// believed it held when the key lapsed — unless the holder was only cut
// off (it still runs) and gave the lock up on the lock's own loss signal:
// a holder that obeys such a signal checks its lease, and a signal that
// comes too late is the lock's failure, not this limit.
func (v *view) stoppedPastTTL(f fault, h checker.Hold) (Reach, bool) {
	lapse := f.Start + int64(v.s.TTL)
	switch {
	case v.s.TTL <= 0, f.Start < v.acquired(h), f.Start >= h.HeldUntil, f.Effect <= lapse, h.HeldUntil <= lapse:
		return Reach{}, false
	case h.HeldUntilBy == "lost" && !f.Traits.Has(history.StopsClient):
		return Reach{}, false
	}
	return Reach{From: f.Start, To: f.Effect, Faults: []string{f.ID},
		Note: fmt.Sprintf("client %d stopped by %s %v past the TTL of its lease on %q (the lock exposes no validity)", h.Client, f.Kind,
			time.Duration(f.Effect-lapse).Round(time.Millisecond), h.Key)}, true
}

func (v *view) bareMajorities() []Reach {
	n := len(v.s.Nodes)
	bare := n/2 + 1
	var out []Reach
	for _, h := range v.holds {
		cut := v.cutAt(h.Start)
		if n-len(cut) != bare {
			continue
		}
		out = append(out, Reach{From: h.Start, To: h.End, Faults: v.cutters(h.Start),
			Note: fmt.Sprintf("%s granted with %s cut: on %d of %d nodes", holdText(h), nodesList(cut), bare, n)})
	}
	// A lease the nemesis read on exactly a majority, where no cut seen
	// in the history explains it.
	for _, f := range v.faults {
		if len(f.seen.Lease) != bare || n < 3 || covered(out, f.Start) {
			continue
		}
		out = append(out, Reach{From: f.Start, To: f.Stop, Faults: []string{f.ID},
			Note: fmt.Sprintf("the lease %s aimed at rested on %s: %d of %d nodes", f.ID, nodesList(f.seen.Lease), bare, n)})
	}
	return out
}

func covered(rs []Reach, t int64) bool {
	for _, r := range rs {
		if r.From <= t && t <= r.To {
			return true
		}
	}
	return false
}

// cutters are the partitions active at t.
func (v *view) cutters(t int64) []string {
	var out []string
	for _, f := range v.faults {
		if f.Traits.Has(cutTraits...) && f.Start <= t && t < f.Stop && len(clients(f)) == 0 && len(v.nodes(f)) > 0 {
			out = append(out, f.ID)
		}
	}
	return out
}

// writesKey reports whether o is a write to a lock's key that a replica
// must see: an acquire, extend, init or count-down that happened, or may
// have (ok or info).
func writesKey(o history.Op) bool {
	if o.IsNemesis() || (o.Type != history.OK && o.Type != history.Info) {
		return false
	}
	switch o.F {
	case history.Acquire, history.Extend, history.Init, history.CountDown:
		return true
	}
	return false
}

func (v *view) promotionsLackingKey() []Reach {
	var out []Reach
	for _, f := range v.faults {
		if !f.Traits.Has(promoteTraits...) {
			continue
		}
		// The cut replication: the failover's own (from its start, until
		// the promotion within its window), or a partition's over its
		// start.
		from, to, cut := f.Start, f.Stop, []string{f.ID}
		if !f.seen.CutReplication {
			p, ok := v.replicationCut(f.Start)
			if !ok {
				continue
			}
			from, to, cut = p.Start, f.Start, []string{p.ID, f.ID}
		}
		for _, o := range v.ops {
			if o.Time >= from && o.Time <= to && writesKey(o) {
				out = append(out, Reach{From: o.Time, To: f.Stop, Faults: cut,
					Note: fmt.Sprintf("%s of client %d on %q while replication was cut, then %s", o.F, o.Client, o.Key, f.Desc)})
				break
			}
		}
	}
	return out
}

// replicationCut is a fault cutting replication at t.
func (v *view) replicationCut(t int64) (fault, bool) {
	for _, f := range v.faults {
		if f.seen.CutReplication && !f.Traits.Has(promoteTraits...) && f.Start <= t && t <= f.Stop {
			return f, true
		}
	}
	return fault{}, false
}

func (v *view) lateRenewals() []Reach {
	var out []Reach
	valid := map[string]int64{} // owner value → validity end
	late := map[string]bool{}
	for _, o := range v.ops {
		if o.IsNemesis() || o.Value == "" {
			continue
		}
		switch {
		case o.F == history.Acquire && o.Type == history.OK && o.ValidUntil > 0:
			valid[o.Value] = o.ValidUntil
		case o.F == history.Extend && o.Type == history.Invoke:
			vu, ok := valid[o.Value]
			if ok && !history.NoExpiry(vu) && o.Time > vu && !late[o.Value] {
				late[o.Value] = true
				out = append(out, Reach{From: vu, To: o.Time,
					Note: fmt.Sprintf("client %d's renewal on %q came %v after its lease expired", o.Client, o.Key, time.Duration(o.Time-vu).Round(time.Millisecond))})
			}
		case o.F == history.Extend && o.Type == history.OK && o.ValidUntil > 0:
			valid[o.Value] = o.ValidUntil
		}
	}
	// A holder that went on holding past its validity with no renewal.
	for _, h := range v.holds {
		if late[h.Owner] || history.NoExpiry(h.ValidUntil) || h.HeldUntil <= h.ValidUntil || h.HeldUntilBy == "end" {
			continue
		}
		out = append(out, Reach{From: h.ValidUntil, To: h.HeldUntil,
			Note: fmt.Sprintf("client %d held %q %v past its validity without a renewal", h.Client, h.Key, time.Duration(h.HeldUntil-h.ValidUntil).Round(time.Millisecond))})
	}
	return v.withFaults(out)
}

func (v *view) lostAcquireReplies() []Reach {
	var out []Reach
	for i, o := range v.ops {
		if o.IsNemesis() || o.F != history.Acquire || o.Type != history.Invoke {
			continue
		}
		end, how := v.lastTime(), "never completed"
		if j := v.peer[i]; j >= 0 {
			if v.ops[j].Type != history.Info {
				continue
			}
			end, how = v.ops[j].Time, "unknown: "+v.ops[j].Error
		}
		for _, f := range v.faults {
			if !f.Traits.Has(replyTraits...) || f.Start > end || f.Stop < o.Time {
				continue
			}
			if cs := clients(f); len(cs) > 0 && !slices.Contains(cs, o.Client) {
				continue
			}
			out = append(out, Reach{From: o.Time, To: end, Faults: []string{f.ID},
				Note: fmt.Sprintf("client %d's acquire on %q under %s: %s", o.Client, o.Key, f.Kind, strings.TrimSuffix(how, ": "))})
			break
		}
	}
	return out
}

func (v *view) lastTime() int64 {
	if len(v.ops) == 0 {
		return 0
	}
	return v.ops[len(v.ops)-1].Time
}

// withFaults names, on each reach, the faults active during it.
func (v *view) withFaults(rs []Reach) []Reach {
	for k := range rs {
		for _, f := range v.faults {
			if f.Start <= rs[k].To && rs[k].From <= f.Effect {
				rs[k].Faults = append(rs[k].Faults, f.ID)
			}
		}
	}
	return rs
}

func (v *view) acquiresStalled() []Reach {
	var out []Reach
	for i, o := range v.ops {
		f, ok := v.stalled(i)
		if !ok {
			continue
		}
		done := v.ops[v.peer[i]].Time
		out = append(out, Reach{From: f.Start, To: done, Faults: []string{f.ID},
			Note: fmt.Sprintf("client %d stopped by %s inside its acquire on %q, granted %v after it asked", o.Client, f.Kind, o.Key,
				time.Duration(done-o.Time).Round(time.Millisecond))})
	}
	return out
}

// grant is the position of the ok that completes the acquire invoked at
// ops[i], -1 when ops[i] is no acquire invoke or it was not granted.
func (v *view) grant(i int) int {
	o, j := v.ops[i], v.peer[i]
	if o.IsNemesis() || o.F != history.Acquire || o.Type != history.Invoke || j < 0 || v.ops[j].Type != history.OK {
		return -1
	}
	return j
}

// stalled is the fault that stopped the client of the acquire invoked at
// ops[i] after its request went out and before its grant came back, for
// longer than a lease is valid: acquire-stalled's rule.
func (v *view) stalled(i int) (fault, bool) {
	j := v.grant(i)
	if j < 0 {
		return fault{}, false
	}
	o, done := v.ops[i], v.ops[j].Time
	for _, f := range v.faults {
		if !f.Traits.Has(stallTraits...) || !slices.Contains(clients(f), o.Client) {
			continue
		}
		if f.Start < o.Time || f.Start >= done || f.Effect <= o.Time+int64(v.s.Validity) {
			continue
		}
		return f, true
	}
	return fault{}, false
}

// lateGrants: an acquire granted (ok) whose reply reached its client after
// the validity the grant carries had ended — the lease ran out before its
// holder heard of it. A grant acquire-stalled counts (one stop of the
// client outlasting the validity) is not counted again: the two windows
// split the late grants by cause. Named are the faults with a trait of
// the window active during the call (those aimed at clients only when
// they hit this one).
func (v *view) lateGrants() []Reach {
	var out []Reach
	for i, o := range v.ops {
		j := v.grant(i)
		if j < 0 {
			continue
		}
		g := v.ops[j]
		if g.ValidUntil == 0 || history.NoExpiry(g.ValidUntil) || g.Time <= g.ValidUntil {
			continue
		}
		if _, ok := v.stalled(i); ok {
			continue
		}
		r := Reach{From: g.ValidUntil, To: g.Time,
			Note: fmt.Sprintf("client %d's acquire on %q was granted %v after its lease's validity ended (asked %v before the grant)",
				o.Client, o.Key, time.Duration(g.Time-g.ValidUntil).Round(time.Millisecond), time.Duration(g.Time-o.Time).Round(time.Millisecond))}
		for _, f := range v.faults {
			if !f.Traits.Has(lateTraits...) || f.Start > g.Time || f.Effect < o.Time {
				continue
			}
			if cs := clients(f); len(cs) > 0 && !slices.Contains(cs, o.Client) {
				continue
			}
			r.Faults = append(r.Faults, f.ID)
		}
		out = append(out, r)
	}
	return out
}

// clientClocksMoved: a fault moved a client's wall clock by more than the
// validity while a lease was held. The holder's own clock: stepped (either
// way) at the fault's start or at its heal, which steps it back, during
// the hold, or drifted that far during it, or stepped back by that much
// at a drift's heal during it — a library that counts its validity on the
// wall clock then believes it holds after its lease ran out. Another
// client's clock: off by more than the validity while the lease was held
// — a timestamp recipe's client then judges the holder's lease expired
// and takes it. One reach per fault, its first.
func (v *view) clientClocksMoved() []Reach {
	valid := time.Duration(v.s.Validity)
	var out []Reach
	for _, f := range v.faults {
		if !f.Traits.Has(skewTraits...) {
			continue
		}
		cs := clients(f)
		rate := math.Abs(f.seen.Rate - 1)
		if f.seen.Rate == 0 {
			rate = 0
		}
		// offAt is when the clock was first off by more than the
		// validity, -1 if never: at once for a step, after a while for
		// a drift.
		offAt := int64(-1)
		switch {
		case time.Duration(abs(f.seen.Offset)) > valid:
			offAt = f.Start
		case rate > 0 && f.Start+int64(float64(valid)/rate) < f.Stop:
			offAt = f.Start + int64(float64(valid)/rate)
		}
		var best *Reach
		for _, h := range v.holds {
			if h.Start > f.Stop || f.Start > h.End {
				continue
			}
			r, ok := v.clockMovedFor(f, h, cs, offAt, rate)
			if ok && (best == nil || r.From < best.From) {
				best = &r
			}
		}
		if best != nil {
			out = append(out, *best)
		}
	}
	return out
}

// clockMovedFor is skew fault f's reach of hold h (see clientClocksMoved).
func (v *view) clockMovedFor(f fault, h checker.Hold, cs []int, offAt int64, rate float64) (Reach, bool) {
	valid := time.Duration(v.s.Validity)
	during := func(t int64) bool { return h.Start <= t && t <= h.End }
	var moved time.Duration
	at, until := int64(-1), min(f.Stop, h.End)
	if !slices.Contains(cs, h.Client) {
		// Another client's clock, off while the lease was held.
		if offAt < 0 || offAt > until {
			return Reach{}, false
		}
		at = max(offAt, h.Start)
		moved = time.Duration(abs(f.seen.Offset))
		if moved <= valid {
			moved = time.Duration(float64(at-f.Start) * rate)
		}
		return Reach{From: at, To: until, Faults: []string{f.ID},
			Note: fmt.Sprintf("client %s's clock was %v off by %s (validity %v) while client %d held %q", clientsList(cs),
				moved.Round(time.Millisecond), f.Kind, v.s.Validity, h.Client, h.Key)}, true
	}
	// The holder's own clock, moved during the hold.
	if off := time.Duration(abs(f.seen.Offset)); off > valid {
		switch {
		case during(f.Start):
			moved, at = off, f.Start
		case f.Healed && during(f.Stop):
			moved, at, until = off, f.Stop, h.End
		}
	}
	if rate > 0 && at < 0 {
		from := max(f.Start, h.Start)
		if d := time.Duration(float64(until-from) * rate); d > valid {
			moved, at = d, from+int64(float64(valid)/rate)
		} else if d := time.Duration(float64(f.Stop-f.Start) * rate); f.Healed && during(f.Stop) && d > valid {
			moved, at, until = d, f.Stop, h.End
		}
	}
	if at < 0 {
		return Reach{}, false
	}
	return Reach{From: at, To: until, Faults: []string{f.ID},
		Note: fmt.Sprintf("client %d's clock moved %v by %s (validity %v) while it held %q", h.Client,
			moved.Round(time.Millisecond), f.Kind, v.s.Validity, h.Key)}, true
}

func clientsList(cs []int) string {
	xs := make([]string, len(cs))
	for i, c := range cs {
		xs[i] = fmt.Sprint(c)
	}
	return strings.Join(xs, ", ")
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
