package checker

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/history"
)

// FuzzCheck: whatever history decodes, Check answers or returns an error;
// it never panics, and its verdict agrees with its checkers.
func FuzzCheck(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
	}
	f.Add([]byte(`{"index":0,"process":1,"client":1,"type":"invoke","f":"write","key":"k","value":"x","time":5}`+"\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, flags bool) {
		ops, err := history.Decode(bytes.NewReader(data))
		if err != nil && ops == nil {
			return
		}
		res, err := Check(ops, Config{TTL: 100 * time.Millisecond, Subject: Subject{Fenced: flags, Counter: flags, Reentrant: flags},
			LinearizabilityTimeout: 200 * time.Millisecond})
		if err != nil {
			return
		}
		overall := Valid
		for _, c := range res.Checkers {
			overall = merge(overall, c.Verdict)
			if (c.Anomalies > 0) != (c.Verdict == Invalid) {
				t.Fatalf("%s: %d anomalies but %s", c.Name, c.Anomalies, c.Verdict)
			}
		}
		if overall != res.Verdict {
			t.Fatalf("verdict %s, checkers merge to %s", res.Verdict, overall)
		}
		for _, a := range res.Anomalies {
			if len(a.Ops) == 0 || a.Explanation == "" {
				t.Fatalf("anomaly without ops or explanation: %+v", a)
			}
		}
	})
}
