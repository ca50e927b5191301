// Package matrix is the model of a catalog matrix: the verdicts of catalog
// rows on several seeds (Matrix, matrix.json's content), a row's status
// over its seeds (RowStatus), the shards a matrix is split into to run on
// several machines (Shard: units dealt round robin) and the merge of their
// matrix.json files (Merge).
//
// It belongs to the catalog (package scenarios runs the matrix and fills
// it, scenarios.RunMatrix) but sits low, beside the outcome it holds
// (outcome.Expectation per row, the run engine's judgement per seed), so
// that package reports can render it — matrix.json, matrix-junit.xml, the
// terminal table — without importing the engine that runs it. It decides
// nothing about a run: a seed is matched when the run engine judged the
// row reproduced.
package matrix
