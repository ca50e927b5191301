package protocol

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestSplitCommand(t *testing.T) {
	for in, want := range map[string][]string{
		`python3 client.py`:                  {"python3", "client.py"},
		`  php  'my client.php'  --x="a b" `: {"php", "my client.php", "--x=a b"},
		`a\ b "c\"d" 'e\f'`:                  {"a b", `c"d`, `e\f`},
		`""`:                                 {""},
	} {
		got, err := SplitCommand(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{``, `   `, `a 'b`, `a "b`, `a\`} {
		if got, err := SplitCommand(bad); err == nil {
			t.Errorf("SplitCommand(%q) = %q, want an error", bad, got)
		}
	}
}

func TestOptionsFlag(t *testing.T) {
	var raw json.RawMessage
	f := OptionsFlag{O: &raw}
	for _, s := range []string{"timeout=null", "sleep=0.05", "name=worker one", `tags=["a"]`, "sleep=0.1"} {
		if err := f.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"timeout": nil, "sleep": 0.1, "name": "worker one", "tags": []any{"a"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("options %s, want %v", raw, want)
	}
	if err := f.Set("novalue"); err == nil {
		t.Fatal("an option without = was accepted")
	}
}
