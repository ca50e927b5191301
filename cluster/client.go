package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/access"
)

// ClientView is everything one client process needs to reach the cluster
// through its own proxies. It is plain data: the harness marshals it to
// JSON for a workload process, which builds its go-redis clients from it.
type ClientView struct {
	// Client is i in the proxy names c<i>-><node>.
	Client int `json:"client"`
	// Nodes are the data nodes in topology order.
	Nodes []string `json:"nodes"`
	// Addrs maps each data node and Sentinel to this client's proxy
	// c<i>-><node> (a Sentinel of an external deployment that declares no
	// such link: its own address).
	Addrs map[string]string `json:"addrs"`
	// Announced maps the address each data node announces — what Sentinel
	// reports as the primary's address — and each Sentinel's own address —
	// what the Sentinels report of each other — to the node.
	Announced map[string]string `json:"announced,omitempty"`
	// Sentinels are this client's addresses of the Sentinels (its proxies
	// c<i>->s<j>), in order.
	Sentinels []string `json:"sentinels,omitempty"`
	// MasterName is the name the Sentinels know the primary by.
	MasterName string `json:"master_name,omitempty"`
	// Cluster: the nodes form a Redis Cluster; a client seeds a cluster
	// client with Addrs and routes the addresses the nodes announce
	// (Announced) through its own proxies (Dialer).
	Cluster bool `json:"cluster,omitempty"`
	// Credentials and TLS are how the client logs in: references to its
	// secret and TLS files, which the client reads itself (Login), so the
	// view carries no secret wherever it is written.
	Credentials access.Credentials `json:"credentials,omitzero"`
	TLS         *access.TLS        `json:"tls,omitempty"`
}

// Login reads the client's secret and TLS files.
func (v ClientView) Login() (access.Login, error) {
	return access.Resolve(v.Credentials, v.TLS)
}

// ClientView describes client i (numbered from 0, as in the history).
func (c *Cluster) ClientView(client int) (ClientView, error) {
	if client < 0 || client >= c.spec.Clients {
		return ClientView{}, fmt.Errorf("client view %d: the cluster has clients 0..%d", client, c.spec.Clients-1)
	}
	v := ClientView{Client: client, Nodes: c.Nodes(), Addrs: map[string]string{}}
	for _, x := range append(c.Nodes(), c.Sentinels()...) {
		addr, err := c.ClientAddr(client, x)
		if err != nil {
			return ClientView{}, err
		}
		v.Addrs[x] = addr
	}
	c.kind.view(c, &v)
	for _, s := range c.Sentinels() {
		v.Sentinels = append(v.Sentinels, v.Addrs[s])
		v.MasterName = MasterName
	}
	if a := c.spec.Access; a != nil {
		v.Credentials, v.TLS = a.Client, a.TLS
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

// Dialer dials an announced address — a data node's or a Sentinel's —
// through this client's own proxy to it, and any other address (a proxy's)
// as is,
// then does the TLS handshake when tlsCfg is set (go-redis leaves TLS to a
// dialer of its own). Set it as the Dialer of a go-redis FailoverClient so
// that following a failover keeps the client's traffic on its own links.
func (v ClientView) Dialer(tlsCfg *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	route := make(map[string]string, len(v.Announced))
	for announced, node := range v.Announced {
		route[announced] = v.Addrs[node]
	}
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 5 * time.Minute}
	return dialTLS(func(ctx context.Context, network, addr string) (net.Conn, error) {
		if to, ok := route[addr]; ok {
			addr = to
		}
		return d.DialContext(ctx, network, addr)
	}, tlsCfg)
}

// FailoverOptions are the options of a go-redis FailoverClient that follows
// the Sentinels' primary through this client's proxies, logged in as
// login: MasterName, SentinelAddrs, Dialer and the credentials are set;
// timeouts, retries and pool sizes are the caller's (tumbler's clients
// never retry: MaxRetries −1). Nil for a topology without Sentinels.
func (v ClientView) FailoverOptions(login access.Login) *redis.FailoverOptions {
	if len(v.Sentinels) == 0 {
		return nil
	}
	o := &redis.FailoverOptions{
		MasterName:    v.MasterName,
		SentinelAddrs: append([]string(nil), v.Sentinels...),
	}
	login.ApplyFailover(o)
	o.Dialer = v.Dialer(login.TLS)
	return o
}

// viewAnnounced maps, in v, the address each data node and Sentinel
// announces to the node, for a client that follows the Sentinels or a
// Redis Cluster's redirections (Dialer).
func (c *Cluster) viewAnnounced(v *ClientView) {
	for _, x := range append(c.Nodes(), c.Sentinels()...) {
		if a := c.announceAddr(x); a != "" {
			if v.Announced == nil {
				v.Announced = map[string]string{}
			}
			v.Announced[a] = x
		}
	}
}
