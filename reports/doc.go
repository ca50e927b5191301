// Package reports renders a run for people and for CI: one directory per run
// that a person can read in a minute, and the outputs of a catalog matrix.
//
// Write fills a run's directory (which already holds plan.json and
// history.jsonl) with:
//
//   - index.html: the verdict, each anomaly in its sentence linked to its
//     operations and faults, the hold timeline, the plots, the fault
//     windows, availability around each fault, every checker's verdict,
//     the parameters, the command that replays the run and links to every
//     other file. Self-contained: inline CSS, a few lines of inline script,
//     no external fetch (the plots are files next to it).
//   - results.json: the checker's Result with the run's metadata and, for
//     a catalog row, the expected verdict against the observed one.
//   - timeline.svg: lock holds per key and client, validity, faults and the
//     anomalies (double grants in red).
//   - latency.svg, throughput.svg: acquire latency and operations per second
//     over the run, with the faults shaded.
//   - linearizability.html: porcupine's view of the lock operations.
//   - junit.xml: one test case per checker (see WriteJUnit for how verdicts
//     map to JUnit outcomes).
//   - logs/<node>.log: copies of the Redis logs.
//
// A report is written for whatever was recorded: no operations, only faults,
// an unknown verdict, an interrupted run, a history the checker rejected.
// Every file is generated on its own; one that fails is listed on the index
// with the reason, and index.html is always written.
//
// The matrix outputs (matrix.json, matrix-junit.xml and a terminal table)
// render a catalog matrix (scenarios/matrix: the verdict of each row on
// each seed, its shards and their merge).
//
// This package only renders: what a run means — its verdict, exit code
// and whether it reproduced a catalog row's expectation — is package
// outcome's (outcome.Judgement, made once by the run engine), and is shown
// here as given. Data flows one way: the run engine hands a Run to Write;
// this package reads nothing back from the engine.
package reports
