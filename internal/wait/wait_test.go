package wait

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestForSleeps(t *testing.T) {
	start := time.Now()
	if err := For(context.Background(), 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 20*time.Millisecond {
		t.Errorf("returned after %v, want at least 20ms", el)
	}
}

func TestForEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	if err := For(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if err := For(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("zero duration on an ended context: err = %v", err)
	}
	if err := For(context.Background(), -time.Second); err != nil {
		t.Errorf("negative duration: err = %v", err)
	}
}
