// Package cluster runs the real Redis topologies tumbler tests, with a
// toxiproxy proxy on every link and the controls a nemesis needs.
//
// # Topologies
//
// ParseTopology reads a topology's text form (Syntax lists them):
// "independent:N" (masters n1..nN), "replicated:R" (primary p, replicas
// r1..rR), "replicated:R+sentinels" (plus redis-sentinel processes s1, s2,
// s3 watching the primary under the name MasterName, quorum 2, down-after
// 1 s), "groups:G" (G groups of a primary n<i> and its replica n<i>r) and
// "cluster:S+R" (a Redis Cluster of S shards, primaries n<i> with replicas
// n<i>r<j>). Each kind is one file, topo_<name>.go, and one line of the
// registry in topokind.go: its form and rules, nodes, links and Traits,
// what it asks of a lock (Topology.CheckLock) and of a provider
// (Topology.Adoptable), and how a Cluster prepares its roles, starts its
// nodes, wires it, shows it to a client (ClientView) and moves its primary
// (Promote, PrimaryOf, WaitFailover). The rest of tumbler asks a topology
// these questions and never compares kinds. Start builds a cluster from a
// Spec and returns when every node answers, every replica is linked and
// every Sentinel knows every replica and the other Sentinels; a spec the
// topology, the provider or this machine cannot run is refused before
// anything starts.
//
// # Links
//
// An embedded toxiproxy (v2.12.0) carries every connection; see Link for the
// names:
//
//	c<i>-><X>   client i → data node X; clients get these (ClientView)
//	c<i>->s<j>  client i → Sentinel j, for clients that find the primary
//	            through the Sentinels
//	<a>-><b>    replica a → primary b; the harness points REPLICAOF here
//	peer-><X>   the address X announces (replica-announce-ip/port), which
//	            is how Sentinels — and replicas Sentinel re-points — reach X;
//	            in a Redis Cluster, cluster-announce-ip/port: its replicas
//	            and MOVED redirections
//	bus-><X>    a Redis Cluster node's announced bus port: every other
//	            node's cluster-bus connection to X
//
// Cut (Reset: fail fast; Blackhole: hang), Delay (latency ± jitter) and
// Heal act on named links, in a direction (Upstream: requests; Downstream:
// replies and the replication stream; Both). An apply or heal takes well
// under a millisecond per link; links are changed in parallel.
//
// # Clients in other processes
//
// A workload process gets its ClientView as JSON: its proxy address per
// node (AddrList for Redlock), and with Sentinels its proxies to the
// Sentinels and a Dialer that maps each node's and Sentinel's announced
// address to the client's own proxy to it, so a go-redis FailoverClient
// (FailoverOptions) asks the Sentinels and follows a failover without
// leaving its own links.
//
// # Node controls
//
// Kill (SIGKILL), StartNode, Restart (with a Persistence mode and a delay),
// Pause/Resume (SIGSTOP/SIGCONT), SetClock (wall-clock offset through the
// clock shim, Spec.Clock), SetClockDrift (a wall clock at a rate, through
// the same shim; a provider that can has CanDrift), Promote (by hand, with watching Sentinels told),
// SentinelFailover, Primary and WaitFailover; in a Redis Cluster,
// ClusterFailover (CLUSTER FAILOVER, FORCE, TAKEOVER), PrimaryOf (a
// shard's primary now) and WaitFailover for a shard. Kill, StartNode, Restart,
// Pause and Resume also take a Sentinel's name.
//
// # Settings
//
// Under the config control (CanConfig) the harness changes a data node's
// settings through its admin connection and restores them when undone
// (settings.go): Squeeze sets a memory limit just above what the node uses
// under a maxmemory-policy and fills it with keys outside the locks' key
// space (FillerPrefix), PushMemory pushes it over once more so it evicts,
// Unsqueeze restores it; RefuseWrites makes it answer every write MISCONF (a
// save into a directory it cannot write fails while
// stop-writes-on-bgsave-error is yes) or READONLY (demoted to a replica of
// an address nobody answers at), AcceptWrites undoes that. The nodes
// tumbler starts run with enable-protected-configs so "dir" can move.
//
// # Clock shim
//
// The clock shim (package internal/clockshim) is an LD_PRELOAD library, compiled with cc on first
// use and cached (clockshim.Build). It shifts CLOCK_REALTIME(_COARSE),
// gettimeofday and time by an offset read from a per-node file mapped into
// memory, so SetClock takes effect at the node's next clock read; monotonic
// clocks are untouched. Redis expires keys by gettimeofday, so a forward
// jump expires that node's keys early. The same file carries a drift
// (clockshim.Drift, written as one seqlocked snapshot), so SetClockDrift
// makes the clock run at a rate: a node at 1.5× expires a key set for a TTL
// after TTL/1.5 of the host's time.
//
// # Processes
//
// A Provider runs the processes, and says what it can do to them
// (Controls), what this machine needs for it (Prepare: the process
// provider's binaries and clock shim) and, by being an Adopter, that it
// adopts servers their owner runs instead of starting them. ProcessProvider
// (the default) runs
// redis-server and redis-sentinel from PATH. Each process leads its own
// process group and has Pdeathsig=SIGKILL; each cluster keeps a record of
// its processes under StateDir(), and Start first calls SweepOrphans, which
// kills the processes of clusters whose owner died. Close ends everything
// and is idempotent; CloseOnSignal closes a cluster on Ctrl-C. Faults a
// provider cannot take are errors wrapping ErrUnsupported.
//
// Each provider declares itself in its own file (provider_<name>.go) as a
// ProviderKind, listed in providerKinds: its name in a plan, a line of
// help, whether it is the default, the most it can do to the nodes,
// whether it can be probed before a run, takes an external configuration,
// adopts its servers or shares them between runs, how a plan's provider
// of it is built and how this machine is made ready for it. The runner,
// the command line and the catalog ask the kind (LookupProvider), never
// compare provider names.
//
// Spec.Server picks the software: Redis (redis-server, redis-sentinel) or
// Valkey (valkey-server, valkey-sentinel; Debian's 8.0 from
// bookworm-backports), same configuration and protocol.
//
// # Credentials and TLS
//
// Spec.Access (package access) says how clients and the harness log in:
// a password, an ACL user and its password, TLS with a CA, client
// certificates and a server name. Servers tumbler starts are configured
// with it (users, masterauth, Sentinel auth-pass and sentinel-pass,
// tls-port and tls-replication) from a private directory outside Dir, so
// no report or log holds a secret; an external deployment must be set up
// so already. CheckClients logs every client in through its own proxies
// before a run; refusals wrap ErrAccess and name the node.
//
// DockerProvider runs each process in containers (testcontainers-go) of a
// Redis image on a Docker network of its own; the proxies listen on the
// network's gateway. With no registry at hand, package cluster/image
// builds tumbler's server image (Debian bookworm by debootstrap, with the
// clock shim) and, for `tumbler image build`, the images docker-compose.yml
// runs. A DockerProvider's record names its containers' label, so
// SweepOrphans removes them too.
//
// ExternalProvider, an Adopter, takes a deployment tumbler does not run
// (ExternalConfig, LoadExternalConfig): its nodes as they are, its links as
// proxies in the owner's toxiproxy, driven through its HTTP API, and node
// faults as the owner's hook commands; Close removes the toxics and undoes
// the node faults it can. It adopts the topologies whose wiring it need not
// own (Topology.Adoptable): not groups, whose clients' proxies the harness
// re-points, nor a Redis Cluster; its config refuses them. deploy/ has a Compose file and an external config
// for it.
//
// # Limits
//
// Sentinels reach a node through one shared peer proxy, so a single
// Sentinel cannot be cut from a single node; Sentinels reach each other
// directly. Sentinel re-points replicas at peer proxies during its
// failover; WaitFailover moves them back onto their replication links.
// After Promote the Sentinels monitor afresh and need about 2 s of hello
// messages before they know each other again (and can agree on a
// failover).
package cluster
