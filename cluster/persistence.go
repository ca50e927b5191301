package cluster

import (
	"fmt"
	"strings"
)

// Persistence is how a data node keeps its data across a restart.
type Persistence string

const (
	// PersistNone keeps nothing: the node starts empty every time.
	PersistNone Persistence = "none"
	// AOFEverySec is appendonly with appendfsync everysec. Redis fsyncs
	// once a second, in the background, and writes the AOF before it
	// replies, except while a background fsync is still running: then it
	// holds the write back, for up to 2 s, and replies all the same. So a
	// process kill (what Kill does) loses no acknowledged write that
	// reached the file, but can lose those of the last seconds on a busy
	// disk; a machine crash loses up to about a second more.
	AOFEverySec Persistence = "aof-everysec"
	// AOFAlways is appendonly with appendfsync always: every acknowledged
	// write is on disk.
	AOFAlways Persistence = "aof-always"
)

// ParsePersistence accepts none, aof-everysec and aof-always.
func ParsePersistence(s string) (Persistence, error) {
	p := Persistence(strings.ToLower(strings.TrimSpace(s)))
	if err := p.Validate(); err != nil {
		return "", err
	}
	return p, nil
}

// String is the mode's name.
func (p Persistence) String() string { return string(p) }

// Set parses a command-line flag's value into p (p is a pflag.Value).
func (p *Persistence) Set(s string) error {
	v, err := ParsePersistence(s)
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// Type names a persistence flag's value in help.
func (*Persistence) Type() string { return "string" }

// Validate reports an unknown mode.
func (p Persistence) Validate() error {
	switch p {
	case PersistNone, AOFEverySec, AOFAlways:
		return nil
	}
	return fmt.Errorf("unknown persistence %q, want none, aof-everysec or aof-always", string(p))
}

// args are the redis-server directives for p.
func (p Persistence) args() []string {
	switch p {
	case AOFEverySec:
		return []string{"--appendonly", "yes", "--appendfsync", "everysec"}
	case AOFAlways:
		return []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	return []string{"--appendonly", "no"}
}
