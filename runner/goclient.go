package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/lock/protocol"
	"github.com/tumbler-dev/tumbler/lock/variants"
)

// GoClientEnv marks a process started as tumbler's Go lock client: tumbler's
// own locks speaking the lock client protocol on stdin and stdout
// (clients/PROTOCOL.md). Its init's options are a plan's lock options
// (variants.Options: "variant", "inner", "wait_replicas", …). It is how the
// protocol itself is tested: the same lock judged in-process and over the
// protocol must get the same verdicts.
const GoClientEnv = "TUMBLER_GO_CLIENT"

// IsGoClient reports whether this process was started as the Go client.
func IsGoClient() bool { return os.Getenv(GoClientEnv) == "1" }

// GoClientMain serves the protocol and exits; it never returns. Call it
// first thing in main or TestMain when IsGoClient is true.
func GoClientMain() {
	if err := protocol.Serve(os.Stdin, os.Stdout, openGoClient); err != nil {
		fmt.Fprintln(os.Stderr, "tumbler go client:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// openGoClient builds tumbler's lock the init describes, with the
// connections a workload client would make from the same view.
func openGoClient(in protocol.Init) (protocol.Opened, error) {
	var opts variants.Options
	if len(in.Options) > 0 {
		dec := json.NewDecoder(bytes.NewReader(in.Options))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&opts); err != nil {
			return protocol.Opened{}, fmt.Errorf("options: %w", err)
		}
	}
	if opts.Variant == "" {
		opts.Variant = "single"
	}
	cl := ClientLock{
		Lock:        variants.Spec{Options: opts, TTL: time.Duration(in.TTLMS) * time.Millisecond},
		View:        viewOf(in),
		ReadTimeout: time.Duration(in.ReadTimeoutMS) * time.Millisecond,
		Discovery:   DiscoveryFixed,
	}
	if in.Connect == protocol.ConnectSentinel {
		cl.Discovery = DiscoverySentinel
	}
	raw, err := json.Marshal(cl)
	if err != nil {
		return protocol.Opened{}, err
	}
	factory, closeFn, err := buildClientLocks(raw)
	if err != nil {
		return protocol.Opened{}, err
	}
	return protocol.Opened{Library: "tumbler " + opts.Variant, Primitive: factory, Close: closeFn}, nil
}

// viewOf is the client view an init describes: the inverse of
// protocolInit.
func viewOf(in protocol.Init) cluster.ClientView {
	v := cluster.ClientView{Client: in.Client, Addrs: map[string]string{}, Sentinels: in.Sentinels,
		MasterName: in.MasterName, Cluster: in.Connect == protocol.ConnectCluster, TLS: in.TLS}
	byAddr := map[string]string{}
	for _, n := range in.Nodes {
		v.Nodes = append(v.Nodes, n.Name)
		v.Addrs[n.Name] = n.Addr
		byAddr[n.Addr] = n.Name
	}
	for i, s := range in.Sentinels {
		name := fmt.Sprintf("s%d", i+1)
		v.Addrs[name] = s
		byAddr[s] = name
	}
	for announced, addr := range in.AddressMap {
		if v.Announced == nil {
			v.Announced = map[string]string{}
		}
		v.Announced[announced] = byAddr[addr]
	}
	if in.Auth != nil {
		v.Credentials = *in.Auth
	}
	return v
}
