// Package outcome owns what a run means once it is checked: the
// expectation a catalog row sets (Expectation, with its Availability
// bounds), the judgement of a run against it (Judge: the verdict, the exit
// code and the Reproduction), and tumbler's exit codes with which code
// each command returns (ARCHITECTURE.md, "Exit codes").
//
// It sits below the run engine and the renderers: the runner calls Judge
// once per run and hands the Judgement to the report; reports shows it
// (index.html, results.json, junit.xml, the matrix outputs) and decides
// nothing; scenarios, hunt, shrink and the command line read it and take
// their exit codes from the functions here:
//
//	command               code
//	run, analyze          RunCode (Judgement.ExitCode), ErrorCode without an outcome
//	reproduce, matrix     MatchCode over the rows' judgements
//	hunt                  HuntCode (hunt.json's exit_code)
//	shrink                ShrinkCode
//	audit, conform        FindingCode
//	any, on bad input     ErrorCode: ExitBadInput for ErrInput, ExitHarness otherwise
//
// The JSON of Judgement and Reproduction is part of results.json (and of
// a matrix.json's expectations): stored runs written by older versions
// load and are judged again by tumbler analyze, so their fields keep their
// names.
package outcome
