package audit

// row is a catalog row (scenarios/catalog/<name>.json) a finding points
// at, for the reader to reproduce what the setting exposes.
type row int

// The rows the audit names. Their names have one home, rowNames, which
// TestRowsInCatalog checks against the catalog: a row renamed there fails
// the test instead of leaving a finding pointing at nothing.
const (
	clusterFailover row = iota
	fencedFailoverTokenReuse
	lockKeyEvicted
	noevictionOOM
	laravelLockFailover
	recipeGetSetSkew
	redlockClockJump
	redlockDriftBeyondFactor
	redlockDriftWithinFactor
	redlockRestartAOFAlways
	redlockRestartEmpty
	redisPyFailover
	redsyncRestartEmpty
	rueidislockNodeClockAhead
	refusedWritesRelease
	sentinelSplitBrain
	sentinelSplitBrainMinReplicas
	singleFailover
	singleFailoverWait
	singleFailoverWaitLagging
	singleRestartEmpty
	symfonyCombinedRestartEmpty
	symfonyRedisStoreFailover
	numRows
)

// rowNames are the rows' names in the catalog.
var rowNames = [numRows]string{
	clusterFailover:               "cluster-failover",
	fencedFailoverTokenReuse:      "fenced-failover-token-reuse",
	lockKeyEvicted:                "lock-key-evicted",
	noevictionOOM:                 "noeviction-oom",
	laravelLockFailover:           "laravel-lock-failover",
	recipeGetSetSkew:              "recipe-getset-skew",
	redlockClockJump:              "redlock-clock-jump",
	redlockDriftBeyondFactor:      "redlock-drift-beyond-factor",
	redlockDriftWithinFactor:      "redlock-drift-within-factor",
	redlockRestartAOFAlways:       "redlock-restart-aof-always",
	redlockRestartEmpty:           "redlock-restart-empty",
	redisPyFailover:               "redis-py-failover",
	redsyncRestartEmpty:           "redsync-restart-empty",
	rueidislockNodeClockAhead:     "rueidislock-node-clock-ahead",
	refusedWritesRelease:          "refused-writes-release",
	sentinelSplitBrain:            "sentinel-split-brain",
	sentinelSplitBrainMinReplicas: "sentinel-split-brain-min-replicas",
	singleFailover:                "single-failover",
	singleFailoverWait:            "single-failover-wait",
	singleFailoverWaitLagging:     "single-failover-wait-lagging",
	singleRestartEmpty:            "single-restart-empty",
	symfonyCombinedRestartEmpty:   "symfony-combined-restart-empty",
	symfonyRedisStoreFailover:     "symfony-redisstore-failover",
}

// rows are the names of rs, as a Finding lists them.
func rows(rs ...row) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = rowNames[r]
	}
	return out
}
