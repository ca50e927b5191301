package protocol

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// lineReader reads a program's lines, each read within a deadline when it
// reads a pipe (f); a line cut by the deadline is kept for the next read.
type lineReader struct {
	r       *bufio.Reader
	f       *os.File // nil: no deadlines
	partial []byte
}

// newLineReader reads r; f, if not nil, is r, a pipe whose reads take deadlines.
func newLineReader(r io.Reader, f *os.File) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), f: f}
}

// next reads one line without its newline, waiting until deadline (zero:
// no limit; past it, os.ErrDeadlineExceeded); a line over MaxLine is an
// error.
func (l *lineReader) next(deadline time.Time) ([]byte, error) {
	if l.f != nil {
		if err := l.f.SetReadDeadline(deadline); err != nil {
			return nil, err
		}
	}
	for {
		chunk, err := l.r.ReadSlice('\n')
		l.partial = append(l.partial, chunk...)
		if len(l.partial) > MaxLine {
			return nil, fmt.Errorf("a line longer than %d bytes", MaxLine)
		}
		switch {
		case err == nil:
			line := l.partial[:len(l.partial)-1]
			l.partial = nil
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(l.partial) > 0:
			return nil, fmt.Errorf("a last line without its newline: %q", clip(l.partial))
		default:
			return nil, err
		}
	}
}
