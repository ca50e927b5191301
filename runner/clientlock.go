package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tumbler-dev/tumbler/access"
	_ "github.com/tumbler-dev/tumbler/clients" // the shipped clients
	"github.com/tumbler-dev/tumbler/internal/clockshim"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/protocol"
	"github.com/tumbler-dev/tumbler/lock/variants"
	"github.com/tumbler-dev/tumbler/workloads"
)

// protocolLocks runs the client's lock client program (a real lock
// library, over the lock client protocol) and makes its locks over it.
func protocolLocks(cl ClientLock) (workloads.Factory, func() error, error) {
	p, closeFn, err := startProgram(context.Background(), cl, nil)
	if err != nil {
		return nil, nil, err
	}
	return p.Primitive, closeFn, nil
}

// startProgram starts the client's lock client program, with the clock
// shim, so client clock faults reach it: in a client worker, in the
// worker's process group, so client pauses and crashes reach it too; in
// the harness (in-process clients, conform), in a group of its own. Its
// stderr goes to cl.ClientLog, its transcript to trace (nil: none); ctx
// ends the wait for its init.
func startProgram(ctx context.Context, cl ClientLock, trace io.Writer) (*protocol.Process, func() error, error) {
	m, err := cl.Lock.Client.Manifest()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: lock client: %w", lock.ErrConfig, err)
	}
	inst, err := m.Install()
	if err != nil {
		return nil, nil, err
	}
	shim, err := clockshim.Build()
	if err != nil {
		return nil, nil, err
	}
	name := m.Name
	if m.File() == "" { // a bare program: its command names it
		name = strings.Join(m.Command, " ")
	}
	cfg := protocol.Config{Name: name, Command: inst.Command, Dir: inst.Dir, Env: inst.Env,
		Init: protocolInit(cl, m), ClockShim: shim, SameGroup: workloads.IsWorker(), Trace: trace, AnswersValid: m.AnswersValid}
	var logFile *os.File
	if cl.ClientLog != "" {
		if err := os.MkdirAll(filepath.Dir(cl.ClientLog), 0o755); err != nil {
			return nil, nil, err
		}
		if logFile, err = os.OpenFile(cl.ClientLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return nil, nil, err
		}
		cfg.Log = logFile
	}
	p, err := protocol.StartContext(ctx, cfg)
	if err != nil {
		if logFile != nil {
			logFile.Close()
		}
		return nil, nil, err
	}
	return p, func() error {
		err := p.Close()
		if logFile != nil {
			logFile.Close()
		}
		return err
	}, nil
}

// clientACL is what a run's ACL user may do: what tumbler's own locks
// need, and what a lock client program's library needs besides.
func (p Plan) clientACL() []string {
	acl := variants.ACL(workloads.DefaultKeyPrefix)
	if p.Lock.Client != nil {
		if m, err := p.Lock.Client.Manifest(); err == nil {
			acl = append(acl, m.ACL...)
		}
	}
	return acl
}

// protocolInit is the init a client program gets: the client's own view
// of the cluster (its proxies), where its secrets are, and the lock.
func protocolInit(cl ClientLock, m protocol.Manifest) protocol.Init {
	v := cl.View
	in := protocol.Init{
		Client: v.Client, Kind: m.Kind, Keys: cl.Keys, TTLMS: cl.Lock.TTL.Milliseconds(),
		ReadTimeoutMS: cl.ReadTimeout.Milliseconds(), Options: cl.Lock.Client.Options,
	}
	steps := append([]string{}, cl.Steps...) // never absent: a client reports only these
	in.Steps = &steps
	for _, name := range v.Nodes {
		in.Nodes = append(in.Nodes, protocol.Node{Name: name, Addr: v.Addrs[name]})
	}
	switch {
	case m.AllNodes:
		in.Connect = protocol.ConnectNodes
	case v.Cluster:
		in.Connect = protocol.ConnectCluster
	case len(v.Sentinels) > 0 && cl.Discovery != DiscoveryFixed:
		in.Connect, in.Sentinels, in.MasterName = protocol.ConnectSentinel, v.Sentinels, v.MasterName
	default:
		in.Connect, in.Nodes = protocol.ConnectNode, in.Nodes[:1]
	}
	for announced, name := range v.Announced {
		if in.AddressMap == nil {
			in.AddressMap = map[string]string{}
		}
		in.AddressMap[announced] = v.Addrs[name]
	}
	if !v.Credentials.IsZero() {
		c := v.Credentials
		in.Auth = &c
	}
	if t := v.TLS; t != nil { // the client's part only
		in.TLS = &access.TLS{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	}
	o := cl.Lock.Options
	s := protocol.LockSettings{WaitReplicas: o.WaitReplicas, Permits: o.Permits, DriftFactor: o.DriftFactor,
		WaitTimeoutMS: o.WaitTimeout.Resolve(cl.Lock.TTL).Milliseconds(),
		NodeTimeoutMS: o.NodeTimeout.Resolve(cl.Lock.TTL).Milliseconds()}
	if s != (protocol.LockSettings{}) {
		in.Lock = &s
	}
	return in
}
