// Package nemesis injects faults into a running cluster and its clients on
// a schedule: a Plan, plain JSON that Generate makes from a seed and that a
// person can write, edit and replay exactly. Run executes a plan and
// records the start and the stop of every fault in the history.
//
// # Plans
//
//	{
//	  "seed": 7,
//	  "ttl": "1s",
//	  "steps": [
//	    {"at": "2s", "fault": "partition", "nodes": ["n4", "n5"], "for": "2ttl"},
//	    {"at": "2.1s", "trigger": "grant", "key": "tumbler:0", "fault": "restart",
//	     "node": "lease", "persistence": "none"},
//	    {"at": "9s", "trigger": "grant", "key": "tumbler:0", "fault": "client-pause",
//	     "client": "holder", "for": "2ttl"}
//	  ]
//	}
//
// Durations (Span) are strings: "750ms", "1.5s", or multiples of the plan's
// ttl such as "0.5ttl"; they are written back as read. Steps are numbered
// from 1 in errors and in fault IDs (step 3 records fault "f3"). Every step
// is one flat JSON object; the fields every kind takes:
//
//	at          when the step applies, from the start of the run (0 if absent)
//	trigger     "grant": after at, wait for the next successful acquire of
//	            key by any client, then apply; no grant within timeout
//	            (default 10 s) skips the step
//	timeout     how long a trigger waits
//	on_timeout  "apply": apply the step anyway when the grant does not come
//	after       how long after its grant a triggered step applies (the
//	            holder's next calls, a nested acquire, go by unhurt)
//	key         the lock key of a trigger, of the "holder" client or of the
//	            "lease" node
//	fault       the kind (below)
//	for         how long until the heal
//
// and the targets and parameters, each taken only by the kinds that list
// it below (Validate refuses the others):
//
//	nodes            data nodes by name (n1.., or p, r1..)
//	node             a node chosen by role when the step applies: "lease"
//	                 or "primary" (below)
//	clients          workload clients by history number (from 0); client i
//	                 uses the cluster's proxies c<i>->X
//	client           "holder": the client holding key when the step applies
//	                 (or the one the trigger saw granted)
//	links            cluster link names, for shape "links"
//	shape            which links a link fault acts on (below)
//	mode             blackhole (default: packets dropped) or reset
//	                 (connections refused)
//	direction        both (default), upstream (requests) or downstream
//	                 (replies)
//	latency, jitter  a delay and its spread
//	persistence      of a node's start: none, aof-everysec, aof-always
//	                 (default: the node's own)
//	delay            how long a restart keeps its nodes down
//	offset, strobe   a clock shift (±), and the interval of flipping it
//	via, cut_replication, lag
//	                 how a failover moves the primary, whether it cuts
//	                 replication first, and how long it waits then
//	step, pause      a lock step to arm, and how long step-pause stops
//	rate             a clock's pace against the host's (drift, client-drift)
//	share, period    the part of every period a starved client runs
//	policy           the maxmemory-policy a memory fault fills a node
//	                 under (strobe: how often it pushes it over)
//	refusal          how refuse-writes makes a node refuse writes:
//	                 misconf or readonly
//
// # Kinds
//
// Each kind lives in one file, kind_<name>.go, with its fields and their
// rules, what it needs of the run, how it is applied, healed and
// described, and how Generate draws it; the file's init registers it, with
// its rank in the documented order, and it declares its traits: what its
// faults do, as history.Trait names it (below). A kind's parameters are a struct
// declared in its own file (LinkParams, RestartParams, …) and embedded in
// Step, so a plan's step stays one flat JSON object; a span field needs no
// listing beyond its declaration: compiling a plan and a shrink walk a
// step's spans (Step.Spans), and a kind reads one resolved against the TTL
// with compiled.span. The table below is rendered from the registry, and a
// test keeps it (and docs/how-it-works.md's copy) in step:
//
//	partition
//	    cuts links — the shape's: clients from nodes, a client from every
//	      node, replication, a bridge, a split, named links — for "for",
//	      dropping packets (blackhole) or refusing connections (reset), one
//	      way or both
//	    takes: shape, nodes, node, clients, client, links, mode, direction;
//	      for > 0
//	    needs: links (clients, or replication)
//	    traits: touches-node, isolates-node, isolates-client
//	latency
//	    delays the shape's links by "latency" ± "jitter" for "for", one way
//	      or both
//	    takes: shape, nodes, node, clients, client, links, direction,
//	      latency, jitter; for > 0
//	    needs: links (clients, or replication)
//	    traits: touches-node, slows-links
//	kill
//	    SIGKILLs nodes and starts them again after "for" ("persistence" is
//	      the mode they run in from then on: none comes back empty, an AOF
//	      mode loads the AOF a node wrote before the kill, if it wrote one;
//	      by default the node's own)
//	    takes: nodes, node, persistence; for > 0
//	    needs: provider control kill/start
//	    traits: touches-node, stops-node, restarts-node, loses-key
//	restart
//	    SIGKILLs nodes and starts them again at once or after "delay"
//	      ("persistence" as for kill); it ends when they answer
//	    takes: nodes, node, persistence, delay; no for
//	    needs: provider control kill/start
//	    traits: touches-node, stops-node, restarts-node, loses-key
//	pause
//	    freezes nodes (SIGSTOP: connections stay open, nothing is answered)
//	      for "for"
//	    takes: nodes, node; for > 0
//	    needs: provider control pause/resume
//	    traits: touches-node, stops-node, freezes-node
//	clock
//	    shifts nodes' wall clocks by "offset" for "for", or with "strobe"
//	      flips between that and 0 every strobe; offsets on one node add up
//	    takes: nodes, node, offset, strobe; for > 0
//	    needs: the clock shim, provider control clock
//	    traits: touches-node, moves-node-clock
//	failover
//	    moves the primary ("via" kill: SIGKILL it, Sentinel — or a Redis
//	      Cluster — promotes a replica; sentinel: SENTINEL FAILOVER;
//	      promote: the replica in "nodes", in groups one per group, one
//	      after the other; in a cluster coordinated, force or takeover:
//	      CLUSTER FAILOVER on a replica of the shard of "nodes" or of
//	      "key"), with "cut_replication" first cutting replication so the
//	      grant it waits for and "lag" are lost; the new roles stay
//	    takes: via, nodes, cut_replication, lag; for ≥ 0
//	    needs: a replicated topology
//	    traits: touches-node, promotes-replica, loses-key
//	client-pause
//	    stops client processes (SIGSTOP: workload, watchdog and sockets) for
//	      "for"; pauses of one client are counted
//	    takes: clients, client; for > 0
//	    needs: clients, process clients
//	    traits: stops-client
//	client-clock
//	    shifts clients' wall clocks by "offset" for "for"; offsets on one
//	      client add up
//	    takes: clients, client, offset; for > 0
//	    needs: clients
//	    traits: moves-client-clock
//	step-pause
//	    arms clients to stop (SIGSTOP) for "pause" when they next reach the
//	      lock step "step"; the arming lasts "for"
//	    takes: clients, client, step, pause; for > 0
//	    needs: clients, process clients
//	    traits: stops-client, arms-step
//	step-crash
//	    arms clients to crash when they next reach the lock step "step"; the
//	      arming lasts "for"
//	    takes: clients, client, step; for > 0
//	    needs: clients
//	    traits: crashes-client, arms-step
//	client-partition
//	    cuts clients from every node and holds back their writes to the
//	      protected resource until the heal, as TCP would, for "for"
//	    takes: clients, client, mode, direction; for > 0
//	    needs: clients
//	    traits: isolates-client
//	drift
//	    runs nodes' wall clocks at "rate" times the host's pace for "for"
//	      (the clock shim's drift: a node at 1.5 gains half a second a
//	      second and expires keys after TTL/1.5), then steps them back to
//	      the host's time; rates on one node add up
//	    takes: nodes, node, rate; for > 0
//	    needs: the clock shim, provider control clock, clock rate
//	    traits: touches-node, moves-node-clock
//	client-drift
//	    runs clients' wall clocks at "rate" times the host's pace for "for",
//	      then steps them back; rates on one client add up
//	    takes: clients, client, rate; for > 0
//	    needs: clients
//	    traits: moves-client-clock
//	client-starve
//	    starves client processes for "for": every "period" they run for
//	      "share" of it and are stopped (SIGSTOP) for the rest, so what
//	      falls due meanwhile — a renewal — runs late while the holder
//	      keeps working; stops of one client are counted with client-pause's
//	    takes: clients, client, share, period; for > 0
//	    needs: clients, process clients
//	    traits: stops-client
//	memory
//	    fills primaries up to a memory limit just above what they used
//	      (CONFIG SET maxmemory) under maxmemory-policy "policy", with keys
//	      outside the locks' key space, for "for": under noeviction every
//	      write that needs memory is refused (OOM); under an evicting policy
//	      the node is pushed over the limit at once and every "strobe" (a
//	      quarter TTL by default) and evicts by the policy — volatile-ttl
//	      a lock key first; the heal restores the settings and deletes the
//	      fillers
//	    takes: nodes, node, policy, strobe; for > 0
//	    needs: provider control config
//	    traits: touches-node, fills-memory, refuses-writes, loses-key
//	refuse-writes
//	    makes primaries refuse every write for "for", as "refusal" says:
//	      misconf — a save fails ("dir" moved where it cannot write) while
//	      stop-writes-on-bgsave-error is yes, so writes get MISCONF;
//	      readonly — the node is demoted to a replica of an address nobody
//	      answers at, so writes get READONLY, as a demoted primary answers a
//	      client still talking to it; the heal restores the settings
//	    takes: nodes, node, refusal; for > 0
//	    needs: provider control config
//	    traits: touches-node, refuses-writes
//	reply-loss
//	    loses the replies on every client's link to nodes for "for" — the
//	      commands run, their answers never arrive — or, with "latency",
//	      delays them by that ± "jitter": a client that sends a command
//	      again after a timeout (go-redis's MaxRetries, lock.redis_retries)
//	      runs it twice
//	    takes: nodes, node, latency, jitter; for > 0
//	    needs: clients
//	    traits: touches-node, loses-replies
//
// Link shapes (partition, latency) are described on Shape; without a
// shape, targets pick one: nodes or node → "nodes" (cut from every client),
// clients or client → "client" (cut from every node), links → "links".
// Upstream is the requests (a cut loses the command), downstream the
// replies and a primary's replication stream (the command runs, its reply
// is lost: an unknown outcome).
//
// A failover with cut_replication first blackholes the replication links
// of the replicas that can be promoted (every replica for Sentinel, the
// named ones for promote) — a blackhole, not a reset, so nothing already
// sent is delivered when the links come back — then waits for its trigger,
// if any, so the grant it waits for is never replicated, then for lag, and
// only then fails over. The fault heals at the later of at+for and the end
// of the failover: the cut links are healed and a primary killed by "via
// kill" starts again, as a replica of the new primary. The new topology
// stays: a failover is not undone.
//
// # Traits and families
//
// A kind's traits (Kind.Traits) are the whole of what the rest of tumbler
// knows of what its faults do: the nemesis records them on every fault
// (history.Fault.Traits); the dangerous windows (package coverage), the
// refusals checker and a guided hunt read them, never a kind's name; and
// within this package the overlap rules and the runner read the traits
// that say a kind stops a node (stops-node), restarts one (restarts-node),
// arms a lock step (arms-step), promotes a replica (promotes-replica) or
// slows links (slows-links). The vocabulary is history.Traits:
//
//	touches-node        acts on the data nodes it targets
//	stops-node          stops data nodes for a while (kills or freezes them)
//	restarts-node       kills data nodes and starts them again
//	freezes-node        freezes data nodes: nothing answered until it ends
//	isolates-node       cuts data nodes off, from clients or each other
//	isolates-client     cuts a client off from the data nodes
//	slows-links         delays the packets on links
//	loses-replies       loses (or delays) replies of commands that ran
//	stops-client        stops or starves a client's process
//	crashes-client      crashes a client
//	arms-step           arms a lock step, acting only if it is reached
//	moves-node-clock    steps or drifts a data node's wall clock
//	moves-client-clock  steps or drifts a client's wall clock
//	loses-key           can lose a held key
//	refuses-writes      makes data nodes refuse writes
//	fills-memory        fills a node's memory to its limit
//	promotes-replica    moves the primary role to a replica
//
// A test refuses a kind that declares none and a trait no kind declares.
// KindsWith lists the kinds with any of some traits, and Families groups
// the kinds as a campaign hunts them — network, process, clock,
// persistence, memory, replies, clients, steps, failover —, each family
// declared by its traits, so a new kind joins the families of its traits
// with no edit here (a test holds every kind to one family at least).
//
// # Targets chosen when a step applies
//
// A step can name its targets by role, resolved when it applies — for a
// step triggered by a grant, from that grant — and recorded as the
// concrete node or client in its fault record (Targets and the sentence):
//
//	"client": "holder"  the client holding key (the one just granted it)
//	"node": "lease"     a data node the holder's lease on key rests on: one
//	                    whose key holds the holder's value, read on every
//	                    node directly (no proxy) right after the grant; the
//	                    plan's seed and the step's number pick among several,
//	                    the same on a replay
//	"node": "primary"   the primary of a replicated topology at that moment
//
// Nobody holding key, or no node holding the lease, skips the step (a
// start and a stop of type fail saying why). Validation takes a node chosen
// by role to be possibly any node.
//
// # What a run must offer
//
// Kind.Available says why a Setup cannot take a kind at all: a topology
// without replicas, no clients, clients in process mode, data nodes
// without the clock shim, or a provider that lacks a node control
// (cluster.Controls: kill/start, wipe, pause/resume, clock, persistence,
// clock rate, config; an external deployment has only the controls it has
// hooks for, and config when its file allows it). A kind may refuse a step a setup
// cannot take on its own terms (readonly where Sentinels would act on a
// demoted primary), and then draws no such step. The provider answers
// for itself (cluster.Provider.Controls); a Setup without a provider — a
// plan checked before the run builds one — assumes every control, and the
// run engine checks the plan again against the provider it builds before
// it starts anything.
//
// # Faults that share a target
//
// Faults compose where the target can take it. A link can carry several
// link faults: per direction the most recent cut and the most recent delay
// apply, and healing one fault leaves the others in place. Clock offsets of
// faults on one node or client add up, and so do their drifts (each heal
// takes away what its own drift gained). Pauses of one node, pauses of one
// client (client-pause, the stopped parts of client-starve, step-pause)
// and the gate of client-partition are counted: the target resumes,
// or its gate opens, when the last of them heals. What cannot compose is
// refused, by Validate where the plan shows it and by Run otherwise (the
// step's start record carries the error): two of kill, restart and pause on
// one node, any of them during a failover, two failovers, one lock step
// of one client armed twice, and two steps of one kind that changes a
// node's settings (memory, refuse-writes) on one node, or one during a
// failover.
//
// # Records
//
// Each applied step gives two history records of process nemesis with F
// "start" and "stop", type info, and a Fault with ID "f<step>", the kind,
// its traits, the targets (node names, "client:<i>", or link names) and
// one sentence saying what it did ("cut n4, n5 from every client for 2s
// (blackhole)"), and on the start what coverage judges from (the nodes of
// the lease a selector read, a node back empty, a clock's offset or rate,
// a replication cut).
// The start's Time is taken just before the fault is applied and the
// stop's just after the heal completed (for a restart, when the nodes
// answer again), so the window covers the whole fault. Client is the
// (first) client hit. An apply that failed has Error on the start record,
// and what did apply is healed at once; a heal that failed has Error on
// the stop record. A skipped step (no grant in time, nobody holding the
// key, a node to promote by hand that is the primary already) gets a start
// and a stop of type fail at the same instant with the reason in Error. The stop of a failover says in Value what came of it
// ("r1 took over from p 3.1s after the kill").
//
// # Timing
//
// Run keeps one loop that applies and heals in time order (heals first at
// a tie, then by step number), so a plan replays as the same sequence of
// records; each fault starts within a few milliseconds of its time. Slow
// work — waiting for a grant and reading the lease's nodes, a node's
// start, a failover — runs beside the loop and does not hold up other
// steps.
//
// # Generated schedules
//
// Generate draws scenes from a mix of kinds and places them in time, up to
// GenOptions.Concurrency faults active at once (a fault counts from its
// start to its planned end plus what a node's start or a failover may
// take), each scene at the first moment it fits the overlap rules above,
// every fault healed before the time limit. With a lock key most faults
// aim at the lock: on the next grant, the holder (client faults) or a node
// its lease rests on ("node": "lease"; the primary of a replicated
// topology). For a lock on a majority of independent masters (Redlock)
// with partition in the mix, a scene may be compound: N/2 nodes cut from
// the clients, so the next lease rests on a bare majority; on that grant a
// restart, kill, clock jump or pause of a node of that lease; the cut
// lasting about a hold (GenOptions.Hold), so it mostly heals after that
// grant and before its holder releases, and another client can gather a
// majority from the freed node and the ones the cut kept from the lease. Clock jumps
// go mostly forward, past the TTL more often than not, on one node or
// several; drifts last a few TTLs, two thirds of them fast, and aimed at a
// lock on a majority run a whole majority's clocks; a starved client (the
// holder, aimed at the lock) runs 5–30 % of periods of half a TTL to two;
// failovers aimed at a grant mostly cut replication first; kills
// and restarts draw each persistence mode unless the run fixed one. The
// same seed, mix and options give the same plan.
package nemesis
