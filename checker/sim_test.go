package checker

import (
	"container/heap"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/tumbler-dev/tumbler/history"
)

// simulate runs a correct lock (one server, SET NX PX semantics, fencing
// tokens, a watchdog) with clients contending for keys, and records what a
// workload would: a history every checker must find valid. Timing follows
// a local test machine loosely (sub-millisecond latency).
type simConfig struct {
	seed     uint64
	clients  int
	keys     int
	ops      int // stop after about this many records
	ttl      time.Duration
	infoRate float64 // chance an acquire or release reply is lost
	writes   bool    // fenced writes inside the critical section
	counter  bool    // read, then write value+1, inside the critical section
	watchdog bool    // some holds outlive the TTL, renewed every TTL/3
}

type simEvent struct {
	at  int64
	seq int64
	fn  func(now int64)
}

type simQueue []simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type simKey struct {
	holder   int // -1 free
	expires  int64
	token    int64
	maxToken int64 // the resource's highest accepted token
	value    int64 // the counter
}

func simulate(cfg simConfig) []history.Op {
	rng := rand.New(rand.NewPCG(cfg.seed, 7))
	ttl := int64(cfg.ttl)
	drift := ttl/100 + int64(2*time.Millisecond)
	var (
		q    simQueue
		seq  int64
		ops  []history.Op
		keys = make([]simKey, cfg.keys)
	)
	for i := range keys {
		keys[i].holder = -1
	}
	at := func(t int64, fn func(int64)) {
		seq++
		heap.Push(&q, simEvent{t, seq, fn})
	}
	lat := func() int64 { return int64(50_000 + rng.IntN(400_000)) } // 50–450 µs one way
	record := func(c int, typ history.Type, f string, k int, t int64, m func(*history.Op)) {
		op := history.Op{Index: int64(len(ops)), Process: history.Process(c), Client: c, Type: typ, F: f, Key: "k" + strconv.Itoa(k), Time: t}
		if m != nil {
			m(&op)
		}
		ops = append(ops, op)
	}
	free := func(k int, now int64) bool { return keys[k].holder < 0 || keys[k].expires <= now }

	var start func(c int, now int64)
	hold := func(c, k int, token, validUntil, now int64) {
		stopAt := now + int64(rng.Float64()*0.4*float64(ttl)) + int64(time.Millisecond)
		if cfg.watchdog && rng.IntN(4) == 0 {
			stopAt = now + int64((1+rng.Float64()*2)*float64(ttl))
		}
		vu := validUntil
		released := false
		var renew func(now int64)
		renew = func(now int64) {
			if released {
				return
			}
			begin := now
			record(c, history.Invoke, history.Extend, k, now, nil)
			at(now+lat(), func(now int64) {
				ok := keys[k].holder == c && keys[k].expires > now
				if ok {
					keys[k].expires = now + ttl
				}
				at(now+lat(), func(now int64) {
					if ok {
						vu = begin + ttl - drift
						record(c, history.OK, history.Extend, k, now, func(o *history.Op) { o.ValidUntil = vu })
						at(now+ttl/3, renew)
					} else {
						record(c, history.Fail, history.Extend, k, now, nil)
					}
				})
			})
		}
		if cfg.watchdog {
			at(now+ttl/3, renew)
		}
		// Work inside the lease, then release; a step is only taken while
		// it will complete well before the validity ends.
		margin := int64(2 * time.Millisecond)
		var work func(now int64)
		release := func(now int64) {
			released = true
			record(c, history.Invoke, history.Release, k, now, nil)
			lost := rng.Float64() < cfg.infoRate
			at(now+lat(), func(arrive int64) {
				ok := keys[k].holder == c && !(lost && rng.IntN(2) == 0)
				if ok {
					keys[k].holder = -1
				}
				reply := arrive + lat()
				if lost {
					reply += ttl / 4 // the client's timeout
				}
				at(reply, func(now int64) {
					typ := history.Fail
					switch {
					case lost:
						typ = history.Info
					case ok:
						typ = history.OK
					}
					record(c, typ, history.Release, k, now, nil)
					at(now+int64(rng.IntN(2_000_000)), func(now int64) { start(c, now) })
				})
			})
		}
		work = func(now int64) {
			if now >= stopAt || now+4*int64(500_000)+margin >= vu {
				if now < vu {
					release(now)
				} else { // validity ran out (only without the watchdog): stop quietly
					released = true
					at(now+int64(rng.IntN(2_000_000)), func(now int64) { start(c, now) })
				}
				return
			}
			switch {
			case cfg.counter:
				record(c, history.Invoke, history.Read, k, now, nil)
				at(now+lat(), func(arrive int64) {
					v := keys[k].value
					at(arrive+lat(), func(now int64) {
						record(c, history.OK, history.Read, k, now, func(o *history.Op) { o.Value = strconv.FormatInt(v, 10) })
						if now+2*int64(500_000)+margin >= vu {
							work(now)
							return
						}
						nv := strconv.FormatInt(v+1, 10)
						record(c, history.Invoke, history.Write, k, now, func(o *history.Op) { o.Value, o.ValidUntil = nv, vu })
						at(now+lat(), func(arrive int64) {
							keys[k].value = v + 1
							at(arrive, func(now int64) {
								record(c, history.OK, history.Write, k, now, func(o *history.Op) { o.Value = nv })
								at(now+int64(5_000_000+rng.IntN(15_000_000)), work)
							})
						})
					})
				})
			case cfg.writes:
				record(c, history.Invoke, history.Write, k, now, func(o *history.Op) { o.Token, o.ValidUntil = token, vu })
				at(now+lat(), func(arrive int64) {
					ok := token >= keys[k].maxToken
					if ok {
						keys[k].maxToken = token
					}
					at(arrive, func(now int64) { // the resource records the accept itself
						typ := history.Fail
						if ok {
							typ = history.OK
						}
						record(c, typ, history.Write, k, now, func(o *history.Op) { o.Token = token })
						at(now+int64(5_000_000+rng.IntN(15_000_000)), work)
					})
				})
			default:
				at(stopAt, work)
				stopAt = 0
			}
		}
		work(now)
	}
	start = func(c int, now int64) {
		if len(ops) >= cfg.ops {
			return
		}
		k := rng.IntN(cfg.keys)
		record(c, history.Invoke, history.Acquire, k, now, nil)
		deadline := now + 2*ttl
		var attempt func(begin int64)
		attempt = func(begin int64) {
			at(begin+lat(), func(arrive int64) {
				// A reply can be lost only when the lock was free: a busy
				// lock answers fast and the client retries anyway.
				lost := free(k, arrive) && rng.Float64() < cfg.infoRate
				granted := free(k, arrive) && !(lost && rng.IntN(2) == 0)
				if granted {
					keys[k].holder, keys[k].expires = c, arrive+ttl
					keys[k].token++
				}
				token := keys[k].token
				reply := arrive + lat()
				switch {
				case lost:
					at(reply+ttl/4, func(now int64) {
						record(c, history.Info, history.Acquire, k, now, func(o *history.Op) { o.Error = "i/o timeout" })
						at(now+int64(rng.IntN(2_000_000)), func(now int64) { start(c, now) })
					})
				case granted:
					at(reply, func(now int64) {
						vu := begin + ttl - drift
						record(c, history.OK, history.Acquire, k, now, func(o *history.Op) {
							o.ValidUntil, o.Token, o.Value = vu, token, "c"+strconv.Itoa(c)
						})
						hold(c, k, token, vu, now)
					})
				case reply+int64(time.Millisecond) < deadline:
					attempt(reply + int64(500_000+rng.IntN(3_000_000)))
				default:
					at(reply, func(now int64) {
						record(c, history.Fail, history.Acquire, k, now, func(o *history.Op) { o.Error = "not obtained" })
						at(now+int64(rng.IntN(2_000_000)), func(now int64) { start(c, now) })
					})
				}
			})
		}
		attempt(now)
	}
	for c := range cfg.clients {
		at(int64(rng.IntN(1_000_000)), func(now int64) { start(c, now) })
	}
	for q.Len() > 0 {
		e := heap.Pop(&q).(simEvent)
		e.fn(e.at)
	}
	return ops
}
