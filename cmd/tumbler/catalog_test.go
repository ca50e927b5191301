package main

import "testing"

func TestReproduceSummaryNamesMissesAndFailures(t *testing.T) {
	results := []rowResult{
		{Scenario: "a", Matched: true},
		{Scenario: "b", Matched: false},
		{Scenario: "c", Error: "boom"},
		{Scenario: "d", Matched: true},
	}
	got := reproduceSummary(results)
	want := "reproduce: 2 of 4 rows as documented; not reproduced: b; run failed: c"
	if got != want {
		t.Fatalf("summary %q, want %q", got, want)
	}
	if got := reproduceSummary(results[:1]); got != "reproduce: 1 of 1 rows as documented" {
		t.Fatalf("all matched: %q", got)
	}
}
