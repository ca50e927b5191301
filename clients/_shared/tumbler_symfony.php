<?php
// tumbler's client for Symfony's Lock component (symfony/lock 5.4 over
// php-redis), shared by the clients symfony (one RedisStore) and
// symfony-combined (a CombinedStore with the ConsensusStrategy over one
// RedisStore per node: Symfony's Redlock).
//
// It drives the library as its users do: a LockFactory over the store,
// createLockFromKey(new Key($name), $ttl, autoRelease: false) per acquire
// (createLock does the same with a Key of its own; keeping the Key is what
// Symfony offers to hand a lock on), acquire(false), refresh($ttl),
// release(), getRemainingLifetime(), and, when tumbler asks whether a lease
// is still valid (the valid request), isExpired() and
// getRemainingLifetime() on the Lock that acquired it. With reuse_key, one
// Key per lock name serves every acquisition of the client process, as an
// application that keeps its Lock object (or its Key) around does: the
// store's token lives in the Key, so every lease of that name carries the
// same token. With per_request (the default), each
// acquire…release cycle is one PHP-FPM request: the store and its
// connections are built anew for it, as the application's container builds
// them on every request (Requests in tumbler_client.php).

namespace Tumbler;

require_once 'Symfony/Component/Lock/autoload.php';

use Symfony\Component\Lock\Exception\LockConflictedException;
use Symfony\Component\Lock\Exception\LockReleasingException;
use Symfony\Component\Lock\Key;
use Symfony\Component\Lock\Lock;
use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\SharedLockStoreInterface;
use Symfony\Component\Lock\Store\CombinedStore;
use Symfony\Component\Lock\Store\RedisStore;
use Symfony\Component\Lock\Strategy\ConsensusStrategy;

/**
 * What the stores of one call did, as ObservedStore saw them: per store,
 * "saved" (a save or a refresh succeeded), "write failed" (one threw an
 * error other than a conflict: it may have landed), "delete failed".
 */
final class Journal
{
    /** @var array<int, array<string, string>> store → what → detail */
    private array $did = [];

    public function begin(): void
    {
        $this->did = [];
    }

    public function note(int $store, string $what, string $detail = ''): void
    {
        $this->did[$store][$what] = $detail;
    }

    /**
     * What may have been left on a node by a call the library reported as
     * failed, or "": a write that failed (it may have landed), or a store
     * that saved whose cleanup delete failed.
     */
    public function leftovers(): string
    {
        $out = [];
        foreach ($this->did as $store => $did) {
            if (isset($did['write failed'])) {
                $out[] = "store $store: " . $did['write failed'];
            } elseif (isset($did['saved'], $did['delete failed'])) {
                $out[] = "store $store saved, then its cleanup failed: " . $did['delete failed'];
            }
        }
        return implode('; ', $out);
    }

    /** How many stores failed to delete. */
    public function deleteFailures(): int
    {
        return count(array_filter($this->did, fn ($did) => isset($did['delete failed'])));
    }

    public function deleteFailed(): string
    {
        return implode('; ', array_filter(array_map(fn ($did) => $did['delete failed'] ?? '', $this->did)));
    }
}

/**
 * A store of the library, unchanged, observed. Around a node's RedisStore
 * it notes in the Journal what the store did: a CombinedStore swallows
 * every store's exception (a timeout included) and reports only
 * "conflicted" — or, on delete, nothing — so the journal is how the client
 * learns which nodes may hold what. Around the store the factory uses it
 * reports the step "granted" once the save succeeded: inside
 * Lock::acquire, after Redis granted the lock (with the store's initial
 * TTL, 300 s by default) and before the refresh that sets the lock's TTL.
 */
final class ObservedStore implements SharedLockStoreInterface
{
    public function __construct(private SharedLockStoreInterface $inner, private ?Journal $journal, private ?Session $session = null) {}

    public function save(Key $key)
    {
        $this->write(fn () => $this->inner->save($key));
        $this->session?->step('granted', (string) $key);
    }

    public function saveRead(Key $key)
    {
        $this->write(fn () => $this->inner->saveRead($key));
    }

    public function putOffExpiration(Key $key, float $ttl)
    {
        $this->write(fn () => $this->inner->putOffExpiration($key, $ttl));
    }

    public function delete(Key $key)
    {
        try {
            $this->inner->delete($key);
        } catch (\Throwable $e) {
            $this->journal?->note(spl_object_id($this), 'delete failed', describe($e));
            throw $e;
        }
    }

    public function exists(Key $key)
    {
        return $this->inner->exists($key);
    }

    private function write(callable $f): void
    {
        try {
            $f();
            $this->journal?->note(spl_object_id($this), 'saved');
        } catch (LockConflictedException $e) {
            throw $e;
        } catch (\Throwable $e) {
            $this->journal?->note(spl_object_id($this), 'write failed', describe($e));
            throw $e;
        }
    }
}

/** What one request of the application builds: the factory over its store, and the connections under it. */
final class SymfonyRequest
{
    /** @param \Redis[] $conns */
    public function __construct(public LockFactory $factory, public array $conns) {}

    /** The request's end: PHP closes its (non-persistent) connections. */
    public function end(): void
    {
        foreach ($this->conns as $r) {
            try {
                $r->close();
            } catch (\Throwable $e) { // one never connected
            }
        }
    }
}

final class SymfonyClient
{
    public string $library;
    private Journal $journal;
    private Requests $requests;
    private ?float $ttl;
    private int $stores = 1;
    private bool $reuseKey;
    /** @var array<string, Key> the Key of each lock name, with reuse_key */
    private array $keys = [];

    private const WHY = [
        'nodes' => 'the client symfony locks one node; symfony-combined is Symfony\'s CombinedStore over every node',
        'sentinel' => 'symfony-combined locks independent nodes (connect nodes); symfony takes a Sentinel primary',
        'node' => 'symfony-combined locks independent nodes (connect nodes); symfony takes one node',
        'cluster' => 'Symfony\'s RedisStore over php-redis\'s RedisCluster dials the addresses the cluster announces, bypassing the client\'s proxies',
    ];

    public function __construct(array $init, Session $session, bool $combined)
    {
        requireLock($init, $combined ? ['nodes'] : ['node', 'sentinel'], self::WHY);
        $o = options($init, ['ttl' => ABSENT, 'initial_ttl' => 300.0, 'per_request' => true, 'reuse_key' => false]);
        $this->reuseKey = boolean($o, 'reuse_key');
        $this->ttl = $o['ttl'] === ABSENT ? $init['ttl_ms'] / 1000 : number($o, 'ttl', 0.0, true);
        $initial = number($o, 'initial_ttl');
        if ($init['connect'] === 'sentinel') {
            sentinelUsable($init);
        }
        $this->journal = new Journal();
        $this->stores = $combined ? count($init['nodes']) : 1;
        $this->requests = new Requests(
            boolean($o, 'per_request'),
            fn () => $this->build($init, $session, $combined, $initial),
            fn (SymfonyRequest $r) => $r->end(),
        );
        $this->library = 'symfony/lock ' . debianVersion('php-symfony-lock') . ' (php-redis ' . phpversion('redis') . ')';
    }

    /**
     * The factory and store an application builds from its lock DSN(s):
     * Symfony's StoreFactory makes each RedisStore's connection lazily
     * (LazyRedis), so it connects — and, through Sentinel, finds the
     * primary — at its first use, and tries again at each use until that
     * succeeds; a CombinedStore (FrameworkBundle's for several DSNs) has
     * one such store per node, and a node that does not answer is one of
     * its failures.
     */
    private function build(array $init, Session $session, bool $combined, float $initial): SymfonyRequest
    {
        if ($combined) {
            $conns = $stores = [];
            foreach ($init['nodes'] as $n) {
                $conns[] = $r = lazyNode($init, $n['addr']);
                $stores[] = new ObservedStore(new RedisStore($r, $initial), $this->journal);
            }
            $store = new CombinedStore($stores, new ConsensusStrategy());
        } else {
            $conns = [$r = redisFor($init)];
            $store = new RedisStore($r, $initial);
        }
        return new SymfonyRequest(new LockFactory(new ObservedStore($store, null, $session)), $conns);
    }

    public function handle(array $req): array
    {
        $this->journal->begin();
        switch ($req['type']) {
            case 'acquire':
                return $this->acquire($req['key'], (int) $req['wait_ms']);
            case 'release':
                return $this->release($req['key'], $req['lease']['token']);
            case 'extend':
                return $this->extend($req['key'], $req['lease']['token'], $req['ttl_ms'] / 1000);
            case 'valid':
                return $this->valid($req['lease']['token']);
        }
        throw new Fail("unsupported request {$req['type']}: this client drives a lock (acquire, release, extend, valid)");
    }

    private function acquire(string $name, int $waitMs): array
    {
        $request = $this->requests->open();
        try {
            $key = $this->key($name);
            $lock = $request->factory->createLockFromKey($key, $this->ttl, false);
            if (!$this->attempt($lock, $waitMs)) {
                $this->certain('not acquired: LockConflictedException (held by another owner, or no quorum)');
                throw new Fail('not acquired: held by another owner (Lock::acquire returned false)');
            }
        } catch (\Throwable $e) {
            $this->requests->close($request);
            throw $e;
        }
        $token = $key->getState(RedisStore::class);
        $this->requests->hold($token, $lock, $request);
        return ['type' => 'ok', 'lease' => $this->lease($token, $lock)];
    }

    /**
     * Symfony 5.4's acquire(true) on a store that cannot block (RedisStore,
     * CombinedStore) saves, and after a conflict sleeps 100 ± 10 ms and
     * saves again, forever (Lock::acquire). wait_ms bounds that wait: the
     * same attempts (acquire(false): one save) with the same pause, until
     * wait_ms has passed.
     */
    private function attempt(Lock $lock, int $waitMs): bool
    {
        $deadline = hrtime(true) + $waitMs * 1000000;
        while (!$lock->acquire(false)) {
            $left = intdiv($deadline - hrtime(true), 1000);
            if ($left <= 0) {
                return false;
            }
            usleep(min((100 + random_int(-10, 10)) * 1000, $left));
        }
        return true;
    }

    private function release(string $name, string $token): array
    {
        [$lock, $request] = $this->requests->held($token) ?? $this->restore($name, $token);
        $ok = false;
        try {
            $lock->release();
            $ok = true;
        } catch (LockReleasingException $e) {
            throw new Unknown(describe($e));
        } finally {
            $this->requests->released($token, $request, $ok);
        }
        // Released as others see it once a majority of the stores deleted
        // (others can then take that majority); a CombinedStore says
        // nothing of the stores whose delete failed.
        if (2 * ($this->stores - $this->journal->deleteFailures()) <= $this->stores) {
            throw new Unknown('release returned, but too few stores deleted for the lock to be free to others: ' . $this->journal->deleteFailed());
        }
        return ['type' => 'ok'];
    }

    private function extend(string $name, string $token, float $ttl): array
    {
        $held = $this->requests->held($token);
        [$lock, $request] = $held ?? $this->restore($name, $token);
        try {
            $lock->refresh($ttl);
        } catch (LockConflictedException $e) {
            $this->certain('not extended: LockConflictedException');
            throw new Fail('not extended: ' . describe($e) . ' (the lease is no longer held)');
        } finally {
            if ($held === null) { // a request of its own, as the lock's restore made
                $this->requests->close($request);
            }
        }
        return ['type' => 'ok', 'lease' => $this->lease($token, $lock)];
    }

    /**
     * What Symfony tells its caller of the lease now: isExpired() and
     * getRemainingLifetime() on the Lock that acquired it, both read on
     * this process's wall clock (Key::isExpired compares the expiring time
     * it computed at the acquire or refresh with microtime). A lease of a
     * previous process of this client has no such Lock here: Symfony's
     * answer would come from a Key that never held it, so the client says
     * it cannot vouch for it (fail).
     */
    private function valid(string $token): array
    {
        $held = $this->requests->held($token);
        if ($held === null) {
            throw new Fail('no Lock of this process acquired this lease (a previous process of the client did): nothing to ask');
        }
        $lock = $held[0];
        $expired = $lock->isExpired();
        $rep = ['type' => 'ok', 'valid' => !$expired];
        $left = $lock->getRemainingLifetime();
        if (!$expired && $left !== null) {
            $rep['remaining_ms'] = max(0, (int) floor($left * 1000));
        }
        return $rep;
    }

    /** The Key of an acquisition: a new one, or with reuse_key the one this process keeps for the name. */
    private function key(string $name): Key
    {
        if (!$this->reuseKey) {
            return new Key($name);
        }
        return $this->keys[$name] ??= new Key($name);
    }

    /** Throws Unknown if the call may have left the lock on a node though the library reported failure ($what). */
    private function certain(string $what): void
    {
        if (($left = $this->journal->leftovers()) !== '') {
            throw new Unknown("$what, but a store may hold the lock: $left");
        }
    }

    /**
     * [Lock, request] for a lease a previous process of this client
     * acquired. Symfony hands a lock to another process as its serialized
     * Key (its resource, expiring time and state, Key::__sleep); the
     * store's state is the lease's token, so the Key is rebuilt with it.
     */
    private function restore(string $name, string $token): array
    {
        $request = $this->requests->open();
        $key = new Key($name);
        $key->setState(RedisStore::class, $token);
        if ($this->reuseKey) {
            $this->keys[$name] ??= $key; // the Key a user would have unserialized, kept from now on
        }
        return [$request->factory->createLockFromKey($key, $this->ttl, false), $request];
    }

    /** The lease as Symfony tells it: its token, and its validity (getRemainingLifetime, judged on this process's wall clock) on CLOCK_MONOTONIC. */
    private function lease(string $token, Lock $lock): array
    {
        $lease = ['token' => $token];
        $left = $lock->getRemainingLifetime();
        if ($left !== null) {
            $lease['valid_until_ns'] = hrtime(true) + (int) round($left * 1e9);
        }
        return $lease;
    }
}
