package clockshim

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFileKeepsAnOldOffset: a clock file of the old size (the offset
// alone) opens with its offset kept and no drift, and a drift written is
// read back whole.
func TestFileKeepsAnOldOffset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clock")
	old := make([]byte, 8)
	offset := -3 * time.Second
	binary.NativeEndian.PutUint64(old, uint64(offset))
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := f.Get(); got != -3*time.Second {
		t.Errorf("offset of an old file: %v, want -3s", got)
	}
	if d := f.Drift(); !d.IsZero() {
		t.Errorf("an old file reads a drift %v", d)
	}
	want := Drift{Base: 250 * time.Millisecond, Slope: -0.5, Anchor: 123456789}
	f.SetDrift(want)
	if got := f.Drift(); got != want {
		t.Errorf("drift read back %+v, want %+v", got, want)
	}
	if got := f.Get(); got != -3*time.Second {
		t.Errorf("a drift moved the offset to %v", got)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != size {
		t.Errorf("the file is %v bytes (%v), want %d", st.Size(), err, size)
	}
}

// TestDriftArithmetic: a rate's displacement, and the sum of two drifts.
func TestDriftArithmetic(t *testing.T) {
	fast := Rate(1.5, 1_000_000_000)
	if got := fast.At(3_000_000_000); got != time.Second {
		t.Errorf("1.5× for 2 s gains %v, want 1s", got)
	}
	slow := Rate(0.5, 2_000_000_000)
	sum := fast.Plus(slow, 2_000_000_000)
	for _, m := range []int64{2_000_000_000, 5_000_000_000} {
		if got, want := sum.At(m), fast.At(m)+slow.At(m); got != want {
			t.Errorf("at %d the sum gains %v, its parts %v", m, got, want)
		}
	}
	if sum.Slope != 0 || sum.IsZero() {
		t.Errorf("1.5× and 0.5× together keep pace but keep what the first gained: %+v", sum)
	}
}
