// Package checker decides whether a recorded history shows a lock failing:
// two clients granted the same lock at once, a write accepted from a client
// whose lease had ended, a fencing token reused, an increment lost, or a lock
// nobody could take any more — and for Redisson's other synchronizers, a
// writer sharing a read-write lock, a fair lock granted out of queue
// order, more semaphore holders than permits, a latch that opened early or
// never. Check composes the checkers, as Jepsen's checker/compose does,
// and merges their verdicts: invalid if any found an anomaly, unknown if
// one could not decide and none found an anomaly, valid otherwise. Each
// anomaly names its operations (history indexes), times, the faults active
// then and says in one sentence what happened.
//
// # Composing the checkers
//
// Each checker is a value (Checker, listed by Checkers): its name, what it
// judges, when it applies and its check. The caller says what the history
// is of (Config.Subject: what the clients hold — a lock, a read-write
// lock, a semaphore's permits, a latch — and what the lock and the
// workload promise: fencing tokens the resource checks, nested holds,
// queue order, a counter); it does not pick checkers. Each checker decides
// from the subject whether it applies, and Check lists every checker in
// its result, those that do not apply (or that Config.Skip names) as
// skipped with the reason. The run engine derives the subject from the
// lock variant's declared traits (package lock/variants) and the
// workload's kind.
//
// # The history contract
//
// (ARCHITECTURE.md, "The history contract" gives the overview; this is the full statement.)
//
// Workloads and the nemesis write ops (history.Op) following these rules;
// the checkers rely on them.
//
// Calls. acquire, release, extend, write and read are calls: an invoke
// record, then one completion (ok, fail or info) from the same process with
// the same f and key (and, for an extend, the same Value: the lease's owner
// value). A completion pairs with the oldest pending invoke of its (process,
// f, key[, owner]) (history.CallKey; the rule's one home is history.Pending),
// so a watchdog may extend while its client writes, and a renewal of the
// previous lease may overlap one of the next. An invoke that
// never completes (the run was killed) counts as info. Fields may sit on
// either record; the completion's non-zero value wins.
//
//   - acquire ok: ValidUntil (required) is the lease's validity end, Token
//     the fencing token if any, Value the owner value. The hold starts at
//     the ok record's Time. Time of every record is when it happened.
//   - release: the hold ends at the release's invoke, whatever its outcome.
//   - extend (by the client or its watchdog, recorded under the client's
//     process): an ok extend's ValidUntil replaces the lease's validity.
//   - write: Value is the value written (counter: the new value, base 10),
//     Token the writer's token, ValidUntil the writer's validity as it
//     believed when writing. ok means the resource accepted it, fail that
//     it rejected it (fencing), info unknown. The ok record's Time is the
//     accept time, and accepted writes of one key are ordered by it (then
//     by index).
//   - read (counter): the ok record's Value is the value read (base 10).
//   - valid: the holder asked its lock's library whether its lease still
//     holds (lock.Validator, check_validity): ok when the library said
//     so, ValidUntil the end it gave (if any); fail when it did not; info
//     no answer. It acts under a lease as a release does and moves no
//     validity: the stale-writes checker judges a write by its lease as
//     granted and extended, and names the library's last answer.
//   - a read-write lock's acquire, release and extend carry Mode "read" or
//     "write" (Subject.Shape lock.KindReadWrite).
//   - enqueue (fair lock, Subject.Fair): an attempt that left the waiter
//     queued; the ok's ValidUntil is its queue entry's timeout. dequeue: a
//     waiter that gave up left the queue.
//   - init, count-down, await (latch, Subject.Shape lock.KindLatch): init's Value is the
//     count set (ok: set; fail: the latch existed); await ok: the waiter
//     passed, fail: it gave up. A semaphore's init sets Value permits.
//
// A release or extend whose Value is the owner value of one of the
// process's ok acquires of that key acts under that lease; otherwise (and
// for writes and reads) under the lease of the process's latest acquire of
// the key invoked before it.
//
// Events. crash (the process died: its holds end), lost (the lock told its
// holder the lease is gone: the hold of that key, or of every key when Key
// is empty, ends; a Value names the lease by owner value), pause and
// message are single records; their Time is when it happened and their
// type does not matter.
//
// Faults. The nemesis records start and stop ops (process "nemesis") whose
// Fault.ID pairs them. A fault is active from its earliest start record to
// its latest stop record, or to the end of the history when it was never
// stopped.
//
// Counter workloads start every key at 0.
//
// # What each checker believes
//
// Mutual exclusion holds a client from its acquire's ok until the earliest
// of its release's invoke, its lease's validity (pushed by ok extends, even
// past a lapse: the client believes it held throughout), a lost event and
// its crash; acquires with unknown outcome are not holds. Linearizability
// (porcupine) checks the lock itself against a lease mutex: an acquire
// succeeds while another lease is held only if that lease's validity ended
// before the acquire returned; unknown outcomes may or may not have taken
// effect; failed operations have none. It checks each key's history in
// pieces cut where the lock's state is known (pieces.go), so its memory
// does not grow with the length of the history. Fencing, stale writes,
// lost updates and liveness are described on their Kind constants, and so
// are the checkers of the other synchronizers (readers-writers, fairness,
// semaphore, latch, latch-liveness), each in the style of mutual
// exclusion: one sweep, each anomaly with its time, operations and faults.
package checker
