// Package protocol is tumbler's lock client protocol (clients/PROTOCOL.md):
// JSON lines between tumbler and a program, in any language, that drives a
// real lock library. This package holds both ends: the harness's side, a
// Process that runs one client program and hands out lock.Locker and its
// siblings over it (so every workload, fault and checker works on it
// unchanged), and Serve, the client's side for any lock.Primitive written
// in Go, with which tumbler's own locks speak the protocol and the protocol
// itself is tested.
package protocol

import (
	"encoding/json"
	"fmt"

	"github.com/tumbler-dev/tumbler/access"
	"github.com/tumbler-dev/tumbler/lock"
)

// Request types, tumbler → client.
const (
	TypeInit           = "init"
	TypeAcquire        = "acquire"
	TypeRelease        = "release"
	TypeExtend         = "extend"
	TypeAcquireRead    = "acquire_read"
	TypeAcquireWrite   = "acquire_write"
	TypeSetPermits     = "set_permits"
	TypeAcquirePermits = "acquire_permits"
	TypeSetCount       = "set_count"
	TypeCountDown      = "count_down"
	TypeAwait          = "await"
	TypeCount          = "count"
	// TypeValid asks the library whether a lease it granted is still
	// valid, at that moment, on its own clocks (a client whose manifest
	// declares answers_valid).
	TypeValid = "valid"
	// TypeContinue answers a client's step.
	TypeContinue = "continue"
)

// Reply types, client → tumbler, and the client's step message.
const (
	TypeOK   = "ok"
	TypeFail = "fail"
	TypeInfo = "info"
	TypeStep = "step"
)

// Connect modes (Init.Connect).
const (
	ConnectNode     = "node"
	ConnectNodes    = "nodes"
	ConnectSentinel = "sentinel"
	ConnectCluster  = "cluster"
)

// Node is a data node as the client must reach it.
type Node struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
}

// LockSettings are tumbler's lock settings a library may honour.
type LockSettings struct {
	WaitReplicas  int      `json:"wait_replicas,omitempty"`
	WaitTimeoutMS int64    `json:"wait_timeout_ms,omitempty"`
	Permits       int      `json:"permits,omitempty"`
	DriftFactor   *float64 `json:"drift_factor,omitempty"`
	NodeTimeoutMS int64    `json:"node_timeout_ms,omitempty"`
}

// Init is the first request: everything the client needs to drive its
// library. It names where secrets are (access.Credentials, access.TLS),
// never what they are.
type Init struct {
	Type          string              `json:"type"`
	ID            uint64              `json:"id"`
	Client        int                 `json:"client"`
	Kind          lock.Kind           `json:"kind"`
	Keys          []string            `json:"keys"`
	TTLMS         int64               `json:"ttl_ms"`
	Connect       string              `json:"connect"`
	Nodes         []Node              `json:"nodes"`
	Sentinels     []string            `json:"sentinels,omitempty"`
	MasterName    string              `json:"master_name,omitempty"`
	AddressMap    map[string]string   `json:"address_map,omitempty"`
	Auth          *access.Credentials `json:"auth,omitempty"`
	TLS           *access.TLS         `json:"tls,omitempty"`
	ReadTimeoutMS int64               `json:"read_timeout_ms"`
	Options       json.RawMessage     `json:"options,omitempty"`
	// Steps, when present, are the only steps tumbler may stop the client
	// at in this run (the ones its faults arm): the client reports those
	// and skips the others, each of which would cost a round trip. Absent:
	// report every step.
	Steps *[]string     `json:"steps,omitempty"`
	Lock  *LockSettings `json:"lock,omitempty"`
}

// Validate checks what a client can rely on.
func (in Init) Validate() error {
	switch {
	case in.TTLMS <= 0:
		return fmt.Errorf("init: ttl_ms %d must be positive", in.TTLMS)
	case len(in.Keys) == 0:
		return fmt.Errorf("init: no keys")
	case len(in.Nodes) == 0 && in.Connect != ConnectSentinel:
		return fmt.Errorf("init: no nodes")
	}
	if in.Kind == "" {
		return fmt.Errorf("init: no kind (valid: %v)", lock.Kinds)
	}
	if err := in.Kind.Check(); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	switch in.Connect {
	case ConnectNode, ConnectNodes, ConnectCluster:
	case ConnectSentinel:
		if len(in.Sentinels) == 0 || in.MasterName == "" {
			return fmt.Errorf("init: connect sentinel needs sentinels and master_name")
		}
	default:
		return fmt.Errorf("init: connect %q unknown (valid: node, nodes, sentinel, cluster)", in.Connect)
	}
	if len(in.Options) > 0 {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(in.Options, &m); err != nil {
			return fmt.Errorf("init: options must be a JSON object: %w", err)
		}
	}
	return nil
}

// Request is any request after init.
type Request struct {
	Type    string `json:"type"`
	ID      uint64 `json:"id"`
	Key     string `json:"key,omitempty"`
	WaitMS  *int64 `json:"wait_ms,omitempty"`
	TTLMS   int64  `json:"ttl_ms,omitempty"`
	Lease   *Lease `json:"lease,omitempty"`
	Permits int    `json:"permits,omitempty"`
	Count   *int64 `json:"count,omitempty"`
	// InReplyTo is set on a continue: the step's id.
	InReplyTo uint64 `json:"in_reply_to,omitempty"`
}

// Lease is what a library told its caller about a grant.
type Lease struct {
	Token        string `json:"token,omitempty"`
	Fence        int64  `json:"fence,omitempty"`
	ValidUntilNS int64  `json:"valid_until_ns,omitempty"`
	Mode         string `json:"mode,omitempty"`
}

// Reply is a client's line: a reply to a request (InReplyTo set) or a
// step (Type "step", with the client's own ID).
type Reply struct {
	InReplyTo *uint64 `json:"in_reply_to,omitempty"`
	Type      string  `json:"type"`
	Error     string  `json:"error,omitempty"`
	Lease     *Lease  `json:"lease,omitempty"`
	Library   string  `json:"library,omitempty"`
	Set       *bool   `json:"set,omitempty"`
	// Held, on a fail reply to an acquire: the library found the key held
	// by another owner (lock.ErrHeld), a claim the refusals checker holds
	// it to.
	Held  bool   `json:"held,omitempty"`
	Count *int64 `json:"count,omitempty"`
	// Valid and RemainingMS answer a valid request: whether the library
	// says the lease is still valid, and, if it says, its remaining
	// lifetime in milliseconds.
	Valid       *bool  `json:"valid,omitempty"`
	RemainingMS *int64 `json:"remaining_ms,omitempty"`
	// A step: its id, the step's name and the key.
	ID   uint64 `json:"id,omitempty"`
	Step string `json:"step,omitempty"`
	Key  string `json:"key,omitempty"`
}

// check says what is wrong with a reply to req, or nil.
func (r Reply) check(req Request) error {
	if r.Type == TypeStep {
		if r.Step == "" {
			return fmt.Errorf("a step without its \"step\" name")
		}
		return nil
	}
	if r.InReplyTo == nil {
		return fmt.Errorf("a reply without \"in_reply_to\"")
	}
	if *r.InReplyTo != req.ID {
		return fmt.Errorf("a reply to request %d while request %d is in flight", *r.InReplyTo, req.ID)
	}
	if r.Held && (r.Type != TypeFail || req.Type != TypeAcquire) {
		return fmt.Errorf("\"held\" on a %s reply to %s: only a fail reply to acquire says the key was held", r.Type, req.Type)
	}
	switch r.Type {
	case TypeFail, TypeInfo:
		return nil
	case TypeOK:
	case "":
		return fmt.Errorf("a reply without \"type\"")
	default:
		return fmt.Errorf("unknown reply type %q (valid: ok, fail, info, step)", r.Type)
	}
	switch req.Type {
	case TypeInit:
		if r.Library == "" {
			return fmt.Errorf("an ok init without \"library\" (the library's name and version)")
		}
	case TypeAcquire, TypeAcquireRead, TypeAcquireWrite, TypeAcquirePermits, TypeExtend:
		if r.Lease == nil {
			return fmt.Errorf("an ok %s without \"lease\"", req.Type)
		}
		if r.Lease.Fence < 0 {
			return fmt.Errorf("an ok %s with a negative fence %d", req.Type, r.Lease.Fence)
		}
	case TypeSetPermits, TypeSetCount:
		if r.Set == nil {
			return fmt.Errorf("an ok %s without \"set\"", req.Type)
		}
	case TypeCount:
		if r.Count == nil {
			return fmt.Errorf("an ok count without \"count\"")
		}
	case TypeValid:
		return r.checkValid()
	}
	return nil
}

// checkValid says what is wrong with an ok reply to a valid request.
func (r Reply) checkValid() error {
	switch {
	case r.Valid == nil:
		return fmt.Errorf("an ok valid without \"valid\" (true or false: what the library says of the lease now)")
	case r.RemainingMS == nil:
		return nil
	case *r.RemainingMS < 0:
		return fmt.Errorf("an ok valid with a negative remaining_ms %d", *r.RemainingMS)
	case !*r.Valid && *r.RemainingMS > 0:
		return fmt.Errorf("an ok valid saying the lease is not valid with %d ms of it remaining", *r.RemainingMS)
	}
	return nil
}
