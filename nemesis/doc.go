// Package nemesis injects the faults of DESIGN.md §5 into a running
// cluster and its clients on a schedule: a Plan, plain JSON that Generate
// makes from a seed and that a person can write, edit and replay exactly.
// Run executes a plan and records the start and the stop of every fault in
// the history.
//
// # Plans
//
//	{
//	  "seed": 7,
//	  "ttl": "1s",
//	  "steps": [
//	    {"at": "2s", "fault": "partition", "nodes": ["n4", "n5"], "for": "2ttl"},
//	    {"at": "6s", "fault": "restart", "nodes": ["n1"], "persistence": "none", "delay": "0.5ttl"},
//	    {"at": "9s", "trigger": "grant", "key": "tumbler:0", "fault": "client-pause",
//	     "client": "holder", "for": "2ttl"}
//	  ]
//	}
//
// Durations (Span) are strings: "750ms", "1.5s", or multiples of the plan's
// ttl such as "0.5ttl"; they are written back as read. Steps are numbered
// from 1 in errors and in fault IDs (step 3 records fault "f3"). Step
// fields:
//
//	at          when the step applies, from the start of the run (0 if absent)
//	trigger     "grant": after at, wait for the next successful acquire of
//	            key by any client, then apply; no grant within timeout
//	            (default 10 s) skips the step
//	on_timeout  "apply": apply the step anyway when the grant does not come
//	key         the lock key of a trigger or of the "holder" target
//	fault       the kind (below)
//	for         how long until the heal
//	nodes       data nodes by name (n1.., or p, r1..)
//	clients     workload clients by history number (from 0); client i uses
//	            the cluster's proxies c<i>->X
//	client      "holder": the client holding key when the step applies (or
//	            the one the trigger saw granted)
//	links       cluster link names, for shape "links"
//
// Kinds and what they take (anything else is refused):
//
//	partition        shape, targets, mode (blackhole | reset, default
//	                 blackhole), direction (both | upstream | downstream);
//	                 for > 0
//	latency          shape, targets, latency (≥ 1ms), jitter (≤ latency),
//	                 direction; for > 0
//	kill             nodes, persistence (of the start at the heal; none |
//	                 aof-everysec | aof-always, default: unchanged); for > 0
//	restart          nodes, persistence, delay (down time before the start);
//	                 no for: it lasts until the nodes answer
//	pause            nodes (SIGSTOP); for > 0
//	clock            nodes, offset (±), strobe (alternate between 0 and
//	                 offset every strobe interval); for > 0; needs the
//	                 clock shim
//	failover         via (kill | sentinel | promote), nodes (the replica, for
//	                 promote), cut_replication, lag; for ≥ 0
//	client-pause     clients or client; for > 0; process clients only
//	client-clock     clients or client, offset; for > 0
//	step-pause       clients or client, step (a lock step name), pause; for
//	                 > 0 is how long the arming lasts; process clients only
//	step-crash       clients or client, step; for as above
//	client-partition clients or client, mode, direction; for > 0
//
// Link shapes (partition, latency) are described on Shape; without a
// shape, targets pick one: nodes → "nodes" (cut from every client), clients
// or client → "client" (cut from every node), links → "links". Upstream is
// the requests (a cut loses the command), downstream the replies and a
// primary's replication stream (the command runs, its reply is lost: an
// unknown outcome).
//
// A failover with cut_replication first blackholes the replication links
// of the replicas that can be promoted (every replica for Sentinel, the
// named one for promote) — a blackhole, not a reset, so nothing already
// sent is delivered (DESIGN.md §10) — then waits for its trigger, if any,
// so the grant it waits for is never replicated, then for lag, and only
// then fails over. The fault heals at the later of at+for and the end of
// the failover: the cut links are healed and a primary killed by "via
// kill" starts again, as a replica of the new primary. The new topology
// stays: a failover is not undone.
//
// # Faults that share a target
//
// Faults compose where the target can take it. A link can carry several
// link faults: per direction the most recent cut and the most recent delay
// apply, and healing one fault leaves the others in place. Clock offsets of
// faults on one node or client add up. Pauses of one client and the gate of
// client-partition are counted: the client resumes, or its gate opens,
// when the last of them heals. What cannot compose is refused, by Validate
// where the plan shows it and by Run otherwise (the step's start record
// carries the error): two of kill, restart and pause on one node, any of
// them during a failover, two failovers, and one lock step of one client
// armed twice.
//
// # Records
//
// Each applied step gives two history records of process nemesis with F
// "start" and "stop", type info, and a Fault with ID "f<step>", the kind,
// the targets (node names, "client:<i>", or link names) and one sentence
// saying what it did ("cut n4, n5 from every client for 2s (blackhole)").
// The start's Time is taken just before the fault is applied and the
// stop's just after the heal completed (for a restart, when the nodes
// answer again), so the window covers the whole fault. Client is the
// (first) client hit. An apply that failed has Error on the start record,
// and what did apply is healed at once; a heal that failed has Error on
// the stop record. A skipped step (no grant in time, nobody holding the
// key) gets a start and a stop of type fail at the same instant with the
// reason in Error. The stop of a failover says in Value what came of it
// ("r1 took over from p 3.1s after the kill").
//
// # Timing
//
// Run keeps one loop that applies and heals in time order (heals first at
// a tie, then by step number), so a plan replays as the same sequence of
// records; each fault starts within a few milliseconds of its time. Slow
// work — waiting for a grant, a node's start, a failover — runs beside the
// loop and does not hold up other steps.
package nemesis
