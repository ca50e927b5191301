package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/tumbler-dev/tumbler/hunt"
)

// spreadHeader heads the second table: every hunt's time, the median with
// hunts that found nothing counted, and the test against today's.
const spreadHeader = "| configuration | generator | time to first find per hunt | median, every hunt counted | p vs today's |\n|---|---|---|---|---|\n"

// spread is the second table's two lines for one configuration: today's
// hunts, then the guided ones with their p against today's (none for a
// safe configuration, whose hunts should find nothing).
func spread(label string, today, guided []*hunt.Summary, safe bool) string {
	t, g := findTimes(today), findTimes(guided)
	p := "—"
	if !safe {
		p = fmt.Sprintf("%.2f", rankSumP(t, g))
	}
	return fmt.Sprintf("| %s | today's | %s | %s | — |\n| %s | guided | %s | %s | %s |",
		label, perHunt(t), median(t), label, perHunt(g), median(g), p)
}

// findTimes are the hunts' times to their first find, in seconds; a hunt
// that found nothing is +Inf: later than any find, since its budget ran
// out first. The medians and the test below so count it, rather than
// leaving it out (which would make a generator that often finds nothing
// look fast).
func findTimes(ss []*hunt.Summary) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i] = math.Inf(1)
		if _, ok := s.Found(); ok {
			out[i] = s.TimeToFirst.Seconds()
		}
	}
	return out
}

// median of the times ("—" when it is a hunt that found nothing).
func median(ts []float64) string {
	v := slices.Sorted(slices.Values(ts))
	m := v[len(v)/2]
	if len(v)%2 == 0 {
		m = (v[len(v)/2-1] + m) / 2
	}
	if math.IsInf(m, 1) {
		return "—"
	}
	return fmt.Sprintf("%.1f s", m)
}

// perHunt lists the times in hunt order, "—" for nothing found.
func perHunt(ts []float64) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = "—"
		if !math.IsInf(t, 1) {
			parts[i] = fmt.Sprintf("%.1f", t)
		}
	}
	return strings.Join(parts, ", ") + " s"
}

// rankSumP is the two-sided p of a rank-sum test of a against b: the share
// of random splits of the pooled times (ties share their mean rank) whose
// rank sum for a is at least as far from its expectation as the observed
// one. 200,000 splits from a fixed seed, so a table is reproducible.
func rankSumP(a, b []float64) float64 {
	pool := append(slices.Clone(a), b...)
	order := make([]int, len(pool))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return cmpFloat(pool[i], pool[j]) })
	ranks := make([]float64, len(pool))
	for i := 0; i < len(order); {
		j := i
		for j+1 < len(order) && pool[order[j+1]] == pool[order[i]] {
			j++
		}
		for k := i; k <= j; k++ {
			ranks[order[k]] = float64(i+j)/2 + 1
		}
		i = j + 1
	}
	sum := func() (s float64) {
		for _, r := range ranks[:len(a)] {
			s += r
		}
		return s
	}
	mean := float64(len(a)) * float64(len(pool)+1) / 2
	observed := math.Abs(sum() - mean)
	const splits = 200000
	rng := rand.New(rand.NewPCG(1, 2))
	hits := 0
	for range splits {
		rng.Shuffle(len(ranks), func(i, j int) { ranks[i], ranks[j] = ranks[j], ranks[i] })
		if math.Abs(sum()-mean) >= observed-1e-9 {
			hits++
		}
	}
	return float64(hits) / splits
}

func cmpFloat(x, y float64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
