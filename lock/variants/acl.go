package variants

import (
	"strings"

	"github.com/tumbler-dev/tumbler/lock/fair"
	"github.com/tumbler-dev/tumbler/lock/latch"
	"github.com/tumbler-dev/tumbler/lock/reentrant"
	"github.com/tumbler-dev/tumbler/lock/rwlock"
	"github.com/tumbler-dev/tumbler/lock/semaphore"
)

// ACL is the least a Redis ACL user needs to run every built-in lock (but
// the rueidislock adapter, whose own client needs CLIENT TRACKING and keys
// under rueidislock's prefix), read-write lock, semaphore and latch on the
// keys starting with keyPrefix
// (tumbler's workloads use "tumbler:"), in ACL SETUSER / "user" directive
// form, without the user's name, on/off and password. For "tumbler:":
//
//	resetkeys ~tumbler:* ~{tumbler:* ~redisson_lock__channel:{tumbler:*
//	~redisson_lock_queue:{tumbler:* ~redisson_lock_timeout:{tumbler:*
//	~redisson_rwlock:{tumbler:* ~redisson_sc:{tumbler:*
//	~redisson_countdownlatch__channel__{tumbler:*
//	resetchannels &redisson_lock__channel:{tumbler:* &redisson_rwlock:{tumbler:*
//	&redisson_sc:{tumbler:* &redisson_countdownlatch__channel__{tumbler:*
//	-@all +ping +set +get +getrange +del +setnx +getset +pexpire +pttl +incr
//	+exists +type +hexists +hincrby +publish +subscribe +eval +evalsha +wait
//	+hget +hset +hdel +hlen +lindex +lpop +rpush +lrem +zadd +zrem +zscore
//	+zrange +zrangebyscore +incrby +decrby +decr
//
// The key patterns are the keys the locks use (the fair lock's queue and
// timeout set, a permit-expirable semaphore's "{key}:timeout" set) and the
// channels they pass as keys to their scripts; the channels are their
// wake-up channels, each named by its package (Redisson's names). The
// commands are those the locks send and those their Lua scripts call (a
// script's commands are checked against the caller's rights), plus PING,
// with which a run checks each client's login before it starts. Every other
// rule is needed by some lock: TestACLIsLeast drops each in turn and
// watches a lock fail. The README documents this ACL.
func ACL(keyPrefix string) []string {
	pattern := func(name string) string { return strings.TrimSuffix(name, "}") + "*" }
	channels := []string{
		pattern(reentrant.Channel(keyPrefix)), // also the fair lock's, per waiter
		pattern(rwlock.Channel(keyPrefix)),
		pattern(semaphore.Channel(keyPrefix)),
		pattern(latch.Channel(keyPrefix)),
	}
	keys := []string{keyPrefix + "*", "{" + keyPrefix + "*", pattern(fair.Queue(keyPrefix)), pattern(fair.Timeouts(keyPrefix))}
	out := []string{"resetkeys"}
	for _, k := range append(keys, channels...) { // releases pass their channel as a key
		out = append(out, "~"+k)
	}
	out = append(out, "resetchannels")
	for _, c := range channels {
		out = append(out, "&"+c)
	}
	out = append(out, "-@all")
	for _, c := range ACLCommands {
		out = append(out, "+"+c)
	}
	return out
}

// ACLCommands are the commands ACL allows.
var ACLCommands = []string{
	"ping", "set", "get", "getrange", "del", "setnx", "getset", "pexpire", "pttl", "incr", "exists", "type",
	"hexists", "hincrby", "publish", "subscribe", "eval", "evalsha", "wait",
	"hget", "hset", "hdel", "hlen", "lindex", "lpop", "rpush", "lrem", "zadd", "zrem", "zscore",
	"zrange", "zrangebyscore", "incrby", "decrby", "decr",
}
