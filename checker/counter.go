package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tumbler-dev/tumbler/history"
)

// checkLostUpdates follows each counter key through its accepted writes in
// accept order. Every accepted write should raise the counter by one; one
// that leaves it at or below its previous value was based on a stale read
// and erased the increments accepted since the counter last stood below
// it. The final value is also compared with the acknowledged increments.
func checkLostUpdates(p *prepared, res *Result, r *report) {
	writes := acceptedWrites(p)
	reads := map[procKey][]*call{} // ok reads per process and key, in index order
	unknown := map[string]int64{}
	var lastRead = map[string]*call{}
	for i := range p.calls {
		c := &p.calls[i]
		switch {
		case c.f == history.Read && c.typ == history.OK:
			pk := procKey{c.proc, c.key}
			reads[pk] = append(reads[pk], c)
			if l := lastRead[c.key]; l == nil || c.ret >= l.ret {
				lastRead[c.key] = c
			}
		case c.f == history.Write && c.typ == history.Info:
			unknown[c.key]++
		}
	}
	value := func(c *call) (int64, bool) {
		v, err := strconv.ParseInt(strings.TrimSpace(c.value), 10, 64)
		if err != nil {
			r.undecided(fmt.Sprintf("op %d: counter value %q is not a base-10 integer", c.opIndex(), c.value))
			return 0, false
		}
		return v, true
	}
	// basedOn is the writer's latest ok read of the key invoked before it wrote.
	basedOn := func(w *call) *call {
		rs := reads[procKey{w.proc, w.key}]
		j, _ := slices.BinarySearchFunc(rs, w.call, func(c *call, t int64) int { return cmp.Compare(c.ret, t) })
		if j == 0 {
			return nil
		}
		return rs[j-1]
	}
	var total, lostTotal int64
	for _, key := range p.keys {
		ws := writes[key]
		if len(ws) == 0 && lastRead[key] == nil {
			continue
		}
		vals := make([]int64, len(ws))
		for i, w := range ws {
			v, ok := value(w)
			if !ok {
				return
			}
			vals[i] = v
		}
		anomalies := r.Anomalies
		cur := int64(0)
		for i, w := range ws {
			v := vals[i]
			switch {
			case v <= cur:
				j := i
				for j > 0 && vals[j-1] >= v {
					j--
				}
				r.anomaly(lostUpdate(p, key, w, v, cur, ws[j:i], vals[j:i], basedOn(w)))
			case v > cur+1:
				r.warning(Anomaly{
					Kind: CounterJump, Key: key, Ops: []int64{w.opIndex()}, Clients: []int{w.client}, From: w.ret, To: w.ret,
					Explanation: fmt.Sprintf("client %d's write (op %d at %s) took counter %q from %d to %d: %d increments not acknowledged took effect (%d writes of %q had an unknown outcome).",
						w.client, w.opIndex(), secs(w.ret), key, cur, v, v-cur-1, unknown[key], key),
				}, w.ret)
			}
			cur = v
		}
		final := cur
		if rd := lastRead[key]; rd != nil && (len(ws) == 0 || rd.ret > ws[len(ws)-1].ret) {
			v, ok := value(rd)
			if !ok {
				return
			}
			final = v
		}
		acked := int64(len(ws))
		lost := max(0, acked-final)
		total += acked
		lostTotal += lost
		res.Counters = append(res.Counters, CounterSummary{Key: key, Final: final, Acknowledged: acked, Unknown: unknown[key], Lost: lost})
		if lost > 0 && r.Anomalies == anomalies {
			last := ws[len(ws)-1]
			r.anomaly(Anomaly{
				Kind: LostUpdate, Key: key, Ops: []int64{last.opIndex()}, Clients: []int{last.client}, From: 0, To: p.end,
				Explanation: fmt.Sprintf("counter %q ended at %d although %d increments were acknowledged: %d were lost.", key, final, acked, lost),
			}, 0)
		}
	}
	r.stat("increments_acknowledged", total)
	r.stat("increments_lost", lostTotal)
}

func lostUpdate(p *prepared, key string, w *call, v, cur int64, over []*call, overVals []int64, read *call) (Anomaly, int64) {
	a := Anomaly{Kind: LostUpdate, Key: key, Ops: []int64{w.opIndex()}, Clients: []int{w.client}, To: w.ret}
	var erased []string
	for i, o := range over {
		a.Ops = append(a.Ops, o.opIndex())
		a.Clients = append(a.Clients, o.client)
		if i < 3 {
			erased = append(erased, fmt.Sprintf("client %d's %d at %s (op %d)", o.client, overVals[i], secs(o.ret), o.opIndex()))
		}
	}
	if len(over) > 3 {
		erased = append(erased, fmt.Sprintf("%d more", len(over)-3))
	}
	a.From = w.call
	if len(over) > 0 {
		a.From = over[0].ret
	}
	ctxFrom := a.From
	based := ""
	if read != nil {
		a.Ops = append(a.Ops, read.opIndex())
		a.Clients = append(a.Clients, read.client)
		based = fmt.Sprintf(", based on its read of %s at %s (op %d),", read.value, secs(read.ret), read.opIndex())
		ctxFrom = min(ctxFrom, read.call)
	}
	s := fmt.Sprintf("client %d's write of %d to counter %q at %s (op %d)%s set it back from %d", w.client, v, key, secs(w.ret), w.opIndex(), based, cur)
	if len(erased) > 0 {
		s += fmt.Sprintf(", erasing %d acknowledged increments (%s)", len(over), strings.Join(erased, ", "))
	}
	a.Explanation = s + "; " + p.faultClause(p.faultsIn(ctxFrom, w.ret)) + "."
	return a, ctxFrom
}
