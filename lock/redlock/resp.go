package redlock

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// The few pieces of the Redis protocol (RESP2) the pipelined transport
// needs: encoding its commands as arrays of bulk strings, and decoding the
// replies they can get — simple strings, errors, integers and bulk strings
// (possibly null). A connection that never sends HELLO speaks RESP2 whatever
// the server's default.

func appendArrayHeader(b []byte, n int) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

func appendBulk(b []byte, s string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

func appendBulkInt(b []byte, v int64) []byte {
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], v, 10)
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(d)), 10)
	b = append(b, '\r', '\n')
	b = append(b, d...)
	return append(b, '\r', '\n')
}

// appendCommand encodes one command of string arguments.
func appendCommand(b []byte, args ...string) []byte {
	b = appendArrayHeader(b, len(args))
	for _, a := range args {
		b = appendBulk(b, a)
	}
	return b
}

// reply is one decoded RESP2 reply. str aliases the reader's buffer: it is
// valid until the next read.
type reply struct {
	kind byte // '+' simple string, '-' error, ':' integer, '$' bulk string
	null bool // a null bulk string ($-1)
	num  int64
	str  []byte
}

// maxReply bounds one reply: the transport's commands get replies of a few
// dozen bytes, so anything near this is a desynchronised stream.
const maxReply = 64 << 10

// errProtocol marks a stream that cannot be decoded; the connection is
// dropped.
var errProtocol = errors.New("redis protocol error")

// parseReply decodes the reply at the start of b. n is its length in bytes,
// 0 when b does not hold a whole reply yet.
func parseReply(b []byte) (r reply, n int, err error) {
	eol := bytes.IndexByte(b, '\n')
	if eol < 0 {
		if len(b) > maxReply {
			return r, 0, fmt.Errorf("%w: no line end in %d bytes", errProtocol, len(b))
		}
		return r, 0, nil
	}
	if eol < 2 || b[eol-1] != '\r' {
		return r, 0, fmt.Errorf("%w: malformed line %q", errProtocol, b[:eol+1])
	}
	line := b[1 : eol-1]
	r.kind = b[0]
	switch r.kind {
	case '+', '-':
		r.str = line
		return r, eol + 1, nil
	case ':':
		if r.num, err = strconv.ParseInt(string(line), 10, 64); err != nil {
			return r, 0, fmt.Errorf("%w: integer reply %q", errProtocol, line)
		}
		return r, eol + 1, nil
	case '$':
		size, err := strconv.ParseInt(string(line), 10, 64)
		switch {
		case err != nil || size < -1 || size > maxReply:
			return r, 0, fmt.Errorf("%w: bulk length %q", errProtocol, line)
		case size == -1:
			r.null = true
			return r, eol + 1, nil
		}
		end := eol + 1 + int(size)
		if len(b) < end+2 {
			return r, 0, nil
		}
		if b[end] != '\r' || b[end+1] != '\n' {
			return r, 0, fmt.Errorf("%w: bulk string of %d bytes not followed by CRLF", errProtocol, size)
		}
		r.str = b[eol+1 : end]
		return r, end + 2, nil
	default:
		return r, 0, fmt.Errorf("%w: unexpected reply type %q", errProtocol, r.kind)
	}
}

// respReader reads replies off one connection, keeping what it read past
// the current reply for the next one.
type respReader struct {
	buf  []byte
	r, w int
	err  error // a read error held back until the buffered replies are used
}

func newRespReader() *respReader { return &respReader{buf: make([]byte, 4096)} }

// next returns the next reply. A read error (a deadline included) leaves
// the bytes read so far in place: calling next again resumes.
func (rd *respReader) next(src io.Reader) (reply, error) {
	for {
		if rd.w > rd.r {
			rep, n, err := parseReply(rd.buf[rd.r:rd.w])
			if err != nil {
				return reply{}, err
			}
			if n > 0 {
				rd.r += n
				return rep, nil
			}
		}
		if err := rd.err; err != nil {
			rd.err = nil
			return reply{}, err
		}
		switch {
		case rd.r == rd.w:
			rd.r, rd.w = 0, 0
		case rd.w == len(rd.buf) && rd.r > 0:
			rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
			rd.r = 0
		case rd.w == len(rd.buf):
			rd.buf = append(rd.buf, make([]byte, len(rd.buf))...)
		}
		n, err := src.Read(rd.buf[rd.w:])
		rd.w += n
		rd.err = err
	}
}

// serverError is an error reply. It satisfies redis.Error, so
// lock.Classify treats it as the definite answer it is.
type serverError string

func (e serverError) Error() string { return string(e) }
func (serverError) RedisError()     {}
