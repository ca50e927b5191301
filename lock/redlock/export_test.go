package redlock

import "time"

// SetIdle shortens how long idle connections and parked goroutines live,
// until restore is called.
func SetIdle(d time.Duration) (restore func()) {
	old := idleNanos.Swap(int64(d))
	return func() { idleNanos.Store(old) }
}

// RingClients wraps each address in a one-shard Ring: a UniversalClient
// that is not a *redis.Client, so the lock goes through go-redis.
var RingClients = ringClients
