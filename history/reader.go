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
	var sizeHint int64
	if st, err := f.Stat(); err == nil {
		sizeHint = st.Size()
	}
	return decode(f, sizeHint)
}

// Decode parses a history: one JSON op per line, blank lines ignored, no
// unknown fields, every op valid on its own (Op.Validate) and indexes
// strictly increasing. A malformed line stops the read with a *LineError
// naming the line and the reason, and no ops. An incomplete last line
// returns the complete ops before it and a *TruncatedError.
func Decode(r io.Reader) ([]Op, error) { return decode(r, 0) }

// typicalLineBytes is a little above the size of a recorded lock op's line:
// presizing from the file size saves the copies (and the peak memory) of
// growing the slice, and rarely over-allocates much.
const typicalLineBytes = 128

func decode(r io.Reader, sizeHint int64) ([]Op, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	in := interner{}
	var (
		ops  = make([]Op, 0, min(sizeHint/typicalLineBytes, 1<<26))
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
				perr = fmt.Errorf("index %d does not follow index %d of the line before", op.Index, ops[len(ops)-1].Index)
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
		return Op{}, err
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
