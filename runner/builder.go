package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/access"
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/protocol"
	"github.com/tumbler-dev/tumbler/lock/variants"
	"github.com/tumbler-dev/tumbler/workloads"
)

// BuilderName is the workloads builder every run uses: it turns a client's
// ClientLock into the locks that client takes.
const BuilderName = "tumbler"

func init() {
	workloads.RegisterBuilder(BuilderName, buildClientLocks)
	// A client program's refusal of its init, or a command that cannot
	// start, met in a worker, is bad input at the harness too
	// (clientInput).
	workloads.RegisterErrorKind("client-init", protocol.ErrInit)
	workloads.RegisterErrorKind("client-command", protocol.ErrCommand)
}

// ClientLock is what one client needs to build its locks, as JSON so it can
// travel to a worker process: the lock, and the client's own view of the
// cluster (its proxies).
type ClientLock struct {
	Lock variants.Spec      `json:"lock"`
	View cluster.ClientView `json:"view"`
	// ReadTimeout of the client's Redis connections: a reply slower than
	// this is an unknown outcome.
	ReadTimeout time.Duration `json:"read_timeout"`
	// Discovery: LockPlan.Discovery ("": Sentinel where there are
	// Sentinels).
	Discovery string `json:"discovery,omitempty"`
	// Keys are the keys the client locks (a lock client program is told
	// them up front), and ClientLog where a lock client program's stderr
	// goes (in the run directory).
	Keys      []string `json:"keys,omitempty"`
	ClientLog string   `json:"client_log,omitempty"`
	// Steps are the lock steps the run's faults and crashes may stop a
	// client at: a lock client program reports only those.
	Steps []string `json:"steps,omitempty"`
}

// clientLock is client i's ClientLock: its lock, its view of the cluster
// and, for a lock client program, the keys it will lock (keys) and where
// its log goes (under the run directory dir).
func (p Plan) clientLock(i int, view cluster.ClientView, keys []string, dir string) ClientLock {
	cl := ClientLock{Lock: p.clientLockSpec(i), View: view, ReadTimeout: p.readTimeout(), Discovery: p.Lock.Discovery}
	if p.Lock.Client != nil {
		cl.Keys, cl.ClientLog = keys, filepath.Join(dir, "clients", fmt.Sprintf("client-%d.log", i))
		cl.Steps = p.armableSteps()
	}
	return cl
}

// armableSteps are the steps the plan may stop a client at: those its
// step faults arm and the one its workload crashes at.
func (p Plan) armableSteps() []string {
	var out []string
	for _, st := range p.Faults {
		if st.LockStep != "" && !slices.Contains(out, st.LockStep) {
			out = append(out, st.LockStep)
		}
	}
	if c := p.Workload.Crash; c != nil && c.Step != "" && !slices.Contains(out, c.Step) {
		out = append(out, c.Step)
	}
	return out
}

// buildClientLocks makes one client's Redis connections (through its own
// proxies) and a factory of its locks over them.
func buildClientLocks(raw json.RawMessage) (workloads.Factory, func() error, error) {
	var cl ClientLock
	if err := json.Unmarshal(raw, &cl); err != nil {
		return nil, nil, fmt.Errorf("client lock spec: %w", err)
	}
	if err := cl.Lock.Validate(); err != nil {
		return nil, nil, err
	}
	if len(cl.View.Nodes) == 0 {
		return nil, nil, errors.New("client lock spec: the client view lists no nodes")
	}
	if cl.Lock.Client != nil {
		return protocolLocks(cl)
	}
	// The secret is read here, in the client, from the file or the
	// environment the view names: the spec never holds it.
	login, err := cl.View.Login()
	if err != nil {
		return nil, nil, fmt.Errorf("client lock spec: %w", err)
	}
	tweak := cl.tweak
	var clients []redis.UniversalClient
	switch {
	case cl.Lock.AllNodes():
		for _, addr := range cl.View.AddrList() {
			clients = append(clients, lock.NewClient(addr, tweak, login.Apply))
		}
	case cl.View.Cluster:
		clients = append(clients, clusterClient(cl.View, login, tweak))
	case len(cl.View.Sentinels) > 0 && cl.Discovery != DiscoveryFixed:
		clients = append(clients, failoverClient(cl.View, login, tweak))
	default:
		clients = append(clients, lock.NewClient(cl.View.AddrList()[0], tweak, login.Apply))
	}
	closeAll := func() error {
		var errs []error
		for _, c := range clients {
			errs = append(errs, c.Close())
		}
		return errors.Join(errs...)
	}
	factory := func(key string, opts ...lock.Option) (lock.Primitive, error) {
		return variants.BuildPrimitive(cl.Lock, clients, key, opts...)
	}
	return factory, closeAll, nil
}

// tweak is what the client's lock asks of lock.NewClient's settings: its
// read timeout, and the retries of a client configured as users
// configure go-redis (variants.Options.RedisRetries).
func (cl ClientLock) tweak(o *redis.Options) {
	if cl.ReadTimeout > 0 {
		o.ReadTimeout, o.WriteTimeout = cl.ReadTimeout, cl.ReadTimeout
	}
	if cl.Lock.RedisRetries > 0 {
		o.MaxRetries = cl.Lock.RedisRetries
	}
}

// failoverClient follows the Sentinels' primary through the client's own
// proxies, with lock.NewClient's settings (explicit timeouts, and no
// retries unless the lock's redis_retries asks for them).
func failoverClient(v cluster.ClientView, login access.Login, tweak func(*redis.Options)) *redis.Client {
	base := lock.NewClient("", tweak)
	defer base.Close()
	o := base.Options()
	fo := v.FailoverOptions(login)
	// o is normalized: its "none" is 0, which go-redis's failover options
	// read as "the default, 3".
	fo.MaxRetries = o.MaxRetries
	if fo.MaxRetries == 0 {
		fo.MaxRetries = -1
	}
	fo.DialTimeout, fo.ReadTimeout, fo.WriteTimeout = o.DialTimeout, o.ReadTimeout, o.WriteTimeout
	fo.PoolSize = o.PoolSize
	fo.DisableIdentity = o.DisableIdentity
	fo.Protocol = o.Protocol
	fo.DialerRetries = o.DialerRetries
	return redis.NewFailoverClient(fo)
}

// clusterClient is a go-redis cluster client seeded with the client's own
// proxies, routing every address the nodes announce through them, with
// lock.NewClient's settings. It follows no redirection and retries
// nothing (MaxRedirects −1): a MOVED or ASK reply fails the command as a
// definite refusal and reloads the slot map, and a lost reply stays an
// unknown outcome instead of being sent again to another node. The slot
// map is also reloaded every clusterReload, which is how a client learns
// of a failover whose old primary no longer answers.
func clusterClient(v cluster.ClientView, login access.Login, tweak func(*redis.Options)) *redis.ClusterClient {
	base := lock.NewClient("", tweak)
	defer base.Close()
	o := base.Options()
	co := &redis.ClusterOptions{
		Addrs:                      v.AddrList(),
		Dialer:                     v.Dialer(login.TLS),
		MaxRedirects:               -1,
		MaxRetries:                 o.MaxRetries,
		DialTimeout:                o.DialTimeout,
		ReadTimeout:                o.ReadTimeout,
		WriteTimeout:               o.WriteTimeout,
		PoolSize:                   o.PoolSize,
		DisableIdentity:            o.DisableIdentity,
		Protocol:                   o.Protocol,
		DialerRetries:              o.DialerRetries,
		ClusterStateReloadInterval: clusterReload,
	}
	login.ApplyCluster(co)
	return redis.NewClusterClient(co)
}

// clusterReload is how often a cluster client reloads its slot map.
const clusterReload = 250 * time.Millisecond
