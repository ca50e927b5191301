package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// CommandFlag is the command line of a program of your own
// (--client-cmd "python3 my_client.py --flag"), split as a shell splits
// words: quotes and backslashes, no expansion.
type CommandFlag struct{ C *[]string }

// Set splits s into the command.
func (f CommandFlag) Set(s string) error {
	words, err := SplitCommand(s)
	if err != nil {
		return err
	}
	*f.C = words
	return nil
}

func (f CommandFlag) String() string {
	if f.C == nil {
		return ""
	}
	return strings.Join(*f.C, " ")
}

// Type names the flag's value in help.
func (CommandFlag) Type() string { return "command" }

// SplitCommand splits a command line into words as a shell does, with
// single and double quotes and backslashes, and nothing expanded.
func SplitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord, quote := false, rune(0)
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case r == '\\' && quote != '\'':
			escaped, inWord = true, true
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	switch {
	case quote != 0:
		return nil, fmt.Errorf("command %q: unterminated %c quote", s, quote)
	case escaped:
		return nil, fmt.Errorf("command %q ends in a backslash", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("command %q is empty", s)
	}
	return words, nil
}

// OptionsFlag sets one of a client's options, key=value, each time it is
// given (--client-option timeout=null --client-option sleep=0.05): the
// value is JSON if it parses as JSON (2, 0.5, true, null, "x", [1]), a
// string otherwise.
type OptionsFlag struct{ O *json.RawMessage }

// Set adds key=value to the options object.
func (f OptionsFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("%q: want key=value", s)
	}
	m := map[string]json.RawMessage{}
	if len(*f.O) > 0 {
		if err := json.Unmarshal(*f.O, &m); err != nil {
			return err
		}
	}
	raw := json.RawMessage(v)
	if !json.Valid(raw) {
		raw, _ = json.Marshal(v)
	}
	m[strings.TrimSpace(k)] = raw
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	*f.O = b
	return nil
}

func (f OptionsFlag) String() string {
	if f.O == nil || len(*f.O) == 0 {
		return ""
	}
	var b bytes.Buffer
	_ = json.Compact(&b, *f.O)
	return b.String()
}

// Type names the flag's value in help.
func (OptionsFlag) Type() string { return "key=value" }
