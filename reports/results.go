package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/outcome"
)

// Results is the content of results.json: the checker's result with the
// run's metadata, for programs (CI, the matrix) rather than people.
type Results struct {
	Name        string        `json:"name"`
	Description string        `json:"description,omitempty"`
	Source      string        `json:"source,omitempty"`
	Seed        int64         `json:"seed"`
	Started     time.Time     `json:"started"`
	Elapsed     time.Duration `json:"elapsed_ns"`
	Command     string        `json:"command,omitempty"`
	TTL         time.Duration `json:"ttl_ns"`
	Params      []Param       `json:"params,omitempty"`
	Interrupted bool          `json:"interrupted,omitempty"`
	// Judgement: verdict, exit_code and, for a catalog row, expected.
	outcome.Judgement
	// CheckError says why there is no result.
	CheckError string `json:"check_error,omitempty"`
	// Ops is the number of history records the report saw.
	Ops    int             `json:"ops"`
	Result *checker.Result `json:"result"`
	// Plan is plan.json when it is valid JSON (it is also in its file).
	Plan json.RawMessage `json:"plan,omitempty"`
}

// results gathers a run's Results.
func results(r Run) Results {
	out := Results{
		Name: r.Name, Description: r.Description, Source: r.Source, Seed: r.Seed,
		Started: r.Started, Elapsed: r.Elapsed, Command: r.Command, TTL: r.TTL, Params: r.Params,
		Interrupted: r.Interrupted, Judgement: r.Judgement, CheckError: r.CheckError,
		Ops: len(r.Ops), Result: r.Result,
	}
	if json.Valid(r.Plan) {
		out.Plan = r.Plan
	}
	return out
}

func writeResults(w io.Writer, r Run) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(results(r))
}

// ReadResults reads a run directory's results.json.
func ReadResults(dir string) (Results, error) {
	var r Results
	b, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", filepath.Join(dir, ResultsFile), err)
	}
	return r, nil
}
