package runner

import (
	"errors"
	"strings"
	"testing"
)

// TestParallelForExternal: runs on an external deployment share its
// servers, so they go one at a time; asking for more by flag is refused,
// naming the flag; elsewhere the number asked for stands.
func TestParallelForExternal(t *testing.T) {
	local := Plan{Provider: "process"}
	ext := Plan{Provider: "external"}
	if n, err := ParallelFor([]Plan{local, local}, 4, "parallel", false); err != nil || n != 4 {
		t.Errorf("process rows: %d, %v; want 4", n, err)
	}
	if n, err := ParallelFor([]Plan{local, ext}, 4, "parallel", false); err != nil || n != 1 {
		t.Errorf("external rows at the default: %d, %v; want 1", n, err)
	}
	if n, err := ParallelFor([]Plan{ext}, 1, "parallel", true); err != nil || n != 1 {
		t.Errorf("external rows, --parallel 1: %d, %v", n, err)
	}
	_, err := ParallelFor([]Plan{ext}, 3, "parallel", true)
	if !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "--parallel 3") || !strings.Contains(err.Error(), "external deployment") {
		t.Errorf("external rows, --parallel 3: %v; want a plan error naming the flag", err)
	}
}
