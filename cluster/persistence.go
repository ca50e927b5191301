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
	// AOFEverySec is appendonly with appendfsync everysec. Redis writes
	// the AOF before it replies and only fsyncs once a second, so a
	// process kill (what Kill does) loses no acknowledged write; a machine
	// crash would lose up to about a second.
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
