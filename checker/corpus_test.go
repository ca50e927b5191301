package checker

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/history"
)

type corpusCase struct {
	file    string
	cfg     Config
	want    verdicts
	kinds   []Kind // in time order
	faults  []string
	explain string    // a phrase of some anomaly's explanation
	stat    [3]string // checker, stat, value
}

// corpus is the table of testdata/README.md.
var corpus = []corpusCase{
	{file: "clean-contention"},
	{file: "double-grant", want: verdicts{MutualExclusion: Invalid, Linearizability: Invalid},
		kinds: []Kind{NotLinearizable, DoubleGrant}, faults: []string{"f1"}, explain: "fault f1 (kill n1, restart it empty) started at 0.300 s"},
	{file: "acquire-after-expiry"},
	{file: "unknown-acquire-may-double", stat: [3]string{MutualExclusion, "acquires_unknown", "1"}},
	{file: "unknown-acquire-harmless", stat: [3]string{MutualExclusion, "acquires_unknown", "1"}},
	{file: "release-others-lock", want: verdicts{MutualExclusion: Invalid, Linearizability: Invalid},
		kinds: []Kind{NotLinearizable, DoubleGrant}, explain: "client 2's acquire (op 7"},
	{file: "fenced-stale-rejected", cfg: Config{Subject: Subject{Fenced: true}}, stat: [3]string{StaleWrites, "writes_rejected_outside_lease", "1"}},
	{file: "unfenced-stale-accepted", want: verdicts{StaleWrites: Invalid},
		kinds: []Kind{StaleWrite}, faults: []string{"f1"}, explain: "while client 1 held the lock"},
	{file: "token-reuse", cfg: Config{Subject: Subject{Fenced: true}}, want: verdicts{Fencing: Invalid},
		kinds: []Kind{TokenReuse, TokenOrder}, faults: []string{"f1"}, explain: "fencing token 5"},
	{file: "lost-increment", cfg: Config{Subject: Subject{Counter: true}}, want: verdicts{LostUpdates: Invalid, StaleWrites: Invalid},
		kinds: []Kind{StaleWrite, LostUpdate}, faults: []string{"f1"}, explain: "erasing 1 acknowledged increments"},
	{file: "never-expires", want: verdicts{Liveness: Invalid},
		kinds: []Kind{Unavailable}, explain: "for 5.4s"},
	{file: "watchdog-long-section"},
	{file: "extend-after-lapse", want: verdicts{MutualExclusion: Invalid, Linearizability: Invalid},
		kinds: []Kind{DoubleGrant, NotLinearizable}, explain: "until its release at 1.700 s"},
	{file: "slow-release-reply"},
}

// The corpus of testdata/README.md: every checker's verdict on every known
// history, the anomaly kinds found and the faults they name.
func TestCorpus(t *testing.T) {
	for _, tc := range corpus {
		t.Run(tc.file, func(t *testing.T) {
			ops, err := history.ReadFile(filepath.Join("testdata", tc.file+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			tc.cfg.TTL = time.Second
			res := check(t, ops, tc.cfg)
			expect(t, res, tc.want)
			if got := kinds(res.Anomalies); !slices.Equal(got, tc.kinds) {
				t.Fatalf("anomalies %v, want %v", got, tc.kinds)
			}
			for _, a := range res.Anomalies {
				if !slices.Equal(a.Faults, tc.faults) {
					t.Errorf("%s names faults %v, want %v", a.Kind, a.Faults, tc.faults)
				}
			}
			if tc.explain != "" && !slices.ContainsFunc(res.Anomalies, func(a Anomaly) bool { return strings.Contains(a.Explanation, tc.explain) }) {
				t.Errorf("no explanation says %q", tc.explain)
			}
			if tc.stat[0] != "" {
				c, _ := res.Checker(tc.stat[0])
				if got := c.Stats[tc.stat[1]]; tc.stat[2] != strconv.FormatInt(got, 10) {
					t.Errorf("%s stat %s = %d, want %s", tc.stat[0], tc.stat[1], got, tc.stat[2])
				}
			}
			for _, a := range res.Anomalies {
				t.Logf("%s: %s", a.Kind, a.Explanation)
				// When it happened: where an overlap or an outage begins,
				// otherwise when its last operation returned.
				want := a.To
				if a.Kind == DoubleGrant || a.Kind == Unavailable {
					want = a.From
				}
				if a.At != want || a.At < a.From || a.At > a.To {
					t.Errorf("%s happened at %d, want %d (from %d to %d)", a.Kind, a.At, want, a.From, a.To)
				}
			}
		})
	}
}

// Every file of the corpus is in the table above.
func TestCorpusIsListed(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("testdata", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if len(files) < 13 {
		t.Fatalf("only %d corpus files", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		if !strings.Contains(string(readme), "| "+name+" |") {
			t.Errorf("%s is not in testdata/README.md", name)
		}
		if !slices.ContainsFunc(corpus, func(c corpusCase) bool { return c.file == name }) {
			t.Errorf("%s is not in the corpus table", name)
		}
	}
}
