// Package racebuild tells a test whether its binary was built with the race
// detector, and sizes the suite's CPU-bound property tests by it.
//
// Those tests check pure code (no goroutines for the detector to watch) on
// thousands of generated cases, and under -race every memory access costs
// several times more: three of them took three minutes of one core of the
// race-enabled suite. Under -race they run a sample of their cases, which
// still lets the detector see the code; scripts/test runs them again in full
// without it, naming each (a test here fails when a test that samples is
// missing from that list).
package racebuild

// Sample is n in a plain build and n/div, at least 1, under -race.
func Sample[N ~int | ~int64 | ~uint64](n N, div N) N {
	if !Enabled || div <= 1 {
		return n
	}
	return max(n/div, 1)
}
