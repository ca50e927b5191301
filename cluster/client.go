package cluster

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClientView is everything one client process needs to reach the cluster
// through its own proxies. It is plain data: the harness marshals it to
// JSON for a workload process, which builds its go-redis clients from it.
type ClientView struct {
	// Client is i in the proxy names c<i>-><node>.
	Client int `json:"client"`
	// Nodes are the data nodes in topology order.
	Nodes []string `json:"nodes"`
	// Addrs maps each data node to this client's proxy c<i>-><node>.
	Addrs map[string]string `json:"addrs"`
	// Announced maps the address each data node announces — what Sentinel
	// reports as the primary's address — to the node.
	Announced map[string]string `json:"announced,omitempty"`
	// Sentinels are the Sentinels' addresses (reached directly).
	Sentinels []string `json:"sentinels,omitempty"`
	// MasterName is the name the Sentinels know the primary by.
	MasterName string `json:"master_name,omitempty"`
}

// ClientView describes client i (numbered from 0, as in the history).
func (c *Cluster) ClientView(client int) (ClientView, error) {
	if client < 0 || client >= c.spec.Clients {
		return ClientView{}, fmt.Errorf("client view %d: the cluster has clients 0..%d", client, c.spec.Clients-1)
	}
	v := ClientView{Client: client, Nodes: c.Nodes(), Addrs: map[string]string{}}
	for _, x := range c.order {
		v.Addrs[x] = c.proxies[ClientLink(client, x)].addr()
		if a := c.announceAddr(x); a != "" && (c.topo.Kind == Replicated) {
			if v.Announced == nil {
				v.Announced = map[string]string{}
			}
			v.Announced[a] = x
		}
	}
	if c.topo.Sentinels {
		v.Sentinels = c.SentinelAddrs()
		v.MasterName = MasterName
	}
	return v, nil
}

// AddrList is Addrs in node order: the server list for a Redlock client.
func (v ClientView) AddrList() []string {
	out := make([]string, len(v.Nodes))
	for i, x := range v.Nodes {
		out[i] = v.Addrs[x]
	}
	return out
}

// Dialer dials an announced node address through this client's own proxy
// to that node, and any other address (a Sentinel's, a proxy's) as is. Set
// it as the Dialer of a go-redis FailoverClient so that following a
// failover keeps the client's traffic on its own links.
func (v ClientView) Dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	route := make(map[string]string, len(v.Announced))
	for announced, node := range v.Announced {
		route[announced] = v.Addrs[node]
	}
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 5 * time.Minute}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if to, ok := route[addr]; ok {
			addr = to
		}
		return d.DialContext(ctx, network, addr)
	}
}

// FailoverOptions are the options of a go-redis FailoverClient that follows
// the Sentinels' primary through this client's proxies: MasterName,
// SentinelAddrs and Dialer are set; timeouts, retries and pool sizes are
// the caller's (tumbler's clients never retry: MaxRetries −1). Nil for a
// topology without Sentinels.
func (v ClientView) FailoverOptions() *redis.FailoverOptions {
	if len(v.Sentinels) == 0 {
		return nil
	}
	return &redis.FailoverOptions{
		MasterName:    v.MasterName,
		SentinelAddrs: append([]string(nil), v.Sentinels...),
		Dialer:        v.Dialer(),
	}
}
