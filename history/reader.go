package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxLineBytes bounds one history line; a longer line is malformed.
const MaxLineBytes = 16 << 20

// LineError is a malformed line: the history cannot be trusted past it.
type LineError struct {
	Line   int // 1-based
	Reason string
}

func (e *LineError) Error() string {
	return fmt.Sprintf("history line %d: %s", e.Line, e.Reason)
}

// TruncatedError reports that the last line is incomplete: no final newline
// and not a whole op, as when the run was killed in the middle of a write.
// Decode returns it together with every complete op, so a caller analysing a
// killed run can tolerate it (errors.As) while a caller expecting a
// finished run treats it as any other error.
type TruncatedError struct {
	Line   int // the incomplete line, 1-based
	Reason string
}

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("history line %d: truncated last line (was the run killed mid-write?): %s", e.Line, e.Reason)
}

// ReadFile reads a history file; see Decode.
func ReadFile(path string) ([]Op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	// Counting the lines first sizes the slice exactly: growing it would
	// copy it and, for a moment, hold both copies (a third of the peak
	// memory of loading a million ops).
	lines, err := countLines(f)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return decode(f, lines+1)
}

func countLines(r io.Reader) (int, error) {
	buf := make([]byte, 256<<10)
	n := 0
	for {
		k, err := r.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// Decode parses a history: one JSON op per line, blank lines ignored, no
// unknown fields, every op valid on its own (Op.Validate) and indexes
// strictly increasing. A malformed line stops the read with a *LineError
// naming the line and the reason, and no ops. An incomplete last line
// returns the complete ops before it and a *TruncatedError.
func Decode(r io.Reader) ([]Op, error) { return decode(r, 0) }

// decode reads ops into a slice of capacity lines (a hint).
func decode(r io.Reader, lines int) ([]Op, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	in := interner{}
	var (
		ops  = make([]Op, 0, min(lines, 1<<26))
		line []byte
		long []byte // a line longer than the reader's buffer, reassembled
	)
	for n := 1; ; n++ {
		chunk, err := br.ReadSlice('\n')
		line = chunk
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], chunk...)
			for errors.Is(err, bufio.ErrBufferFull) {
				if len(long) > MaxLineBytes {
					return nil, &LineError{n, fmt.Sprintf("longer than %d bytes", MaxLineBytes)}
				}
				chunk, err = br.ReadSlice('\n')
				long = append(long, chunk...)
			}
			line = long
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("history line %d: %w", n, err)
		}
		complete := err == nil // ends with '\n'
		if len(line) > MaxLineBytes {
			return nil, &LineError{n, fmt.Sprintf("longer than %d bytes", MaxLineBytes)}
		}
		if len(bytes.TrimSpace(line)) > 0 {
			op, perr := parseLine(line, &in)
			if perr == nil && len(ops) > 0 && op.Index <= ops[len(ops)-1].Index {
				perr = fmt.Errorf("index %d (%s) does not follow index %d of the op before: indexes must increase", op.Index, op.Summary(), ops[len(ops)-1].Index)
			}
			switch {
			case perr != nil && !complete:
				return ops, &TruncatedError{n, perr.Error()}
			case perr != nil:
				return nil, &LineError{n, perr.Error()}
			}
			ops = append(ops, op)
		}
		if !complete {
			return ops, nil
		}
	}
}

func parseLine(line []byte, in *interner) (Op, error) {
	var op Op
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&op); err != nil {
		return Op{}, err
	}
	if rest := bytes.TrimSpace(line[dec.InputOffset():]); len(rest) > 0 {
		return Op{}, fmt.Errorf("unexpected data after the op: %.40q", rest)
	}
	if err := op.Validate(); err != nil {
		return Op{}, fmt.Errorf("%s: %w", op.Summary(), err)
	}
	op.Type = Type(in.intern(string(op.Type)))
	op.F = in.intern(op.F)
	op.Key = in.intern(op.Key)
	op.Error = in.intern(op.Error)
	return op, nil
}

// interner makes the few distinct types, functions, keys and error texts of
// a history share one copy each, which keeps a million-op history small.
type interner map[string]string

func (in interner) intern(s string) string {
	if s == "" {
		return ""
	}
	if c, ok := in[s]; ok {
		return c
	}
	in[s] = s
	return s
}

// LineOf finds the line of the history file at path that holds the op with
// the given index (1-based), so that an error about an op can name its
// line; 0 when no line does. It reads the file again: it is meant for
// error messages, not for the way of a check.
func LineOf(path string, index int64) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 256<<10)
	var probe struct {
		Index *int64 `json:"index"`
	}
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			probe.Index = nil
			if json.Unmarshal(line, &probe) == nil && probe.Index != nil && *probe.Index == index {
				return n, nil
			}
		}
		if errors.Is(err, io.EOF) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("history line %d: %w", n, err)
		}
	}
}
