package history

import (
	"strconv"
	"unicode/utf8"
)

// appendOp appends op as one JSON line, byte for byte what encoding/json
// writes for an Op followed by '\n'. Recording is on the hot path of every
// client, and json.Marshal costs about ten times as much and allocates;
// TestAppendOpMatchesEncodingJSON keeps the two in step.
func appendOp(b []byte, o *Op) []byte {
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, o.Index, 10)
	b = append(b, `,"process":`...)
	if o.Process == NemesisProcess {
		b = append(b, `"nemesis"`...)
	} else {
		b = strconv.AppendInt(b, int64(o.Process), 10)
	}
	b = append(b, `,"client":`...)
	b = strconv.AppendInt(b, int64(o.Client), 10)
	b = append(b, `,"type":`...)
	b = appendString(b, string(o.Type))
	b = append(b, `,"f":`...)
	b = appendString(b, o.F)
	if o.Key != "" {
		b = append(b, `,"key":`...)
		b = appendString(b, o.Key)
	}
	if o.Value != "" {
		b = append(b, `,"value":`...)
		b = appendString(b, o.Value)
	}
	if o.Mode != "" {
		b = append(b, `,"mode":`...)
		b = appendString(b, o.Mode)
	}
	if o.Token != 0 {
		b = append(b, `,"token":`...)
		b = strconv.AppendInt(b, o.Token, 10)
	}
	if o.ValidUntil != 0 {
		b = append(b, `,"valid_until":`...)
		b = strconv.AppendInt(b, o.ValidUntil, 10)
	}
	b = append(b, `,"time":`...)
	b = strconv.AppendInt(b, o.Time, 10)
	if o.Error != "" {
		b = append(b, `,"error":`...)
		b = appendString(b, o.Error)
	}
	if o.Held {
		b = append(b, `,"held":true`...)
	}
	if f := o.Fault; f != nil {
		b = append(b, `,"fault":{"id":`...)
		b = appendString(b, f.ID)
		b = append(b, `,"kind":`...)
		b = appendString(b, f.Kind)
		b = appendStrings(b, `,"targets":`, f.Targets)
		b = append(b, `,"desc":`...)
		b = appendString(b, f.Desc)
		if len(f.Traits) > 0 {
			b = append(b, `,"traits":[`...)
			for i, t := range f.Traits {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendString(b, string(t))
			}
			b = append(b, ']')
		}
		b = appendStrings(b, `,"lease":`, f.Lease)
		if f.Empty {
			b = append(b, `,"empty":true`...)
		}
		if f.Offset != 0 {
			b = append(b, `,"offset_ns":`...)
			b = strconv.AppendInt(b, f.Offset, 10)
		}
		if f.Rate != 0 {
			b = append(b, `,"rate":`...)
			b = strconv.AppendFloat(b, f.Rate, 'f', -1, 64)
		}
		if f.CutReplication {
			b = append(b, `,"cut_replication":true`...)
		}
		b = append(b, '}')
	}
	return append(b, '}', '\n')
}

// appendStrings appends name and xs as a JSON array, nothing when xs is
// empty (omitempty).
func appendStrings(b []byte, name string, xs []string) []byte {
	if len(xs) == 0 {
		return b
	}
	b = append(b, name...)
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, x)
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

// appendString quotes s as encoding/json does (HTML-safe escaping, invalid
// UTF-8 replaced by U+FFFD, U+2028/U+2029 escaped).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
