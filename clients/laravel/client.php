<?php
// tumbler's client for Laravel's Redis lock (Illuminate\Cache\RedisLock, as
// php-illuminate-cache 8.83 builds it over php-redis: PhpRedisLock),
// speaking clients/PROTOCOL.md.
//
// It is built outside the framework exactly as Cache::lock() builds it
// inside: a RedisManager with the phpredis driver (its PhpRedisConnector
// makes the PhpRedisConnection), an Illuminate\Cache\RedisStore over it with
// no prefix, and RedisStore::lock($name, $seconds), which returns a
// PhpRedisLock; get() for one attempt, block($seconds) to wait,
// release(), and RedisStore::restoreLock($name, $owner) — Laravel's way to
// release a lock from another process — for a lease a previous process of
// this client acquired. With per_request (the default), each
// acquire…release cycle is one PHP-FPM request: the RedisManager, its
// connection (a new Sentinel lookup) and the store are built anew for it
// and disconnected at its end, as Laravel does on every request (Requests
// in tumbler_client.php).

namespace Tumbler;

require __DIR__ . '/tumbler_client.php';
require_once 'Illuminate/Cache/autoload.php';
require_once 'Illuminate/Redis/autoload.php';

use Illuminate\Cache\RedisStore;
use Illuminate\Contracts\Cache\LockTimeoutException;
use Illuminate\Redis\Connections\PhpRedisConnection;
use Illuminate\Redis\Connectors\PhpRedisConnector;
use Illuminate\Redis\RedisManager;
use Illuminate\Support\Arr;

/**
 * Laravel 8's phpredis driver has no Sentinel support of its own. This
 * connector, registered as a driver with RedisManager::extend (Laravel's
 * hook for custom drivers), does what the community Sentinel drivers do:
 * it asks the Sentinels for the primary (through the client's address
 * map) every time Laravel's connector closure runs — at the first
 * connection and when PhpRedisConnection reconnects after a "went away"
 * error — and otherwise builds the client with PhpRedisConnector's own
 * createClient.
 */
final class SentinelConnector extends PhpRedisConnector
{
    public function __construct(private array $init) {}

    public function connect(array $config, array $options)
    {
        $connector = function () use ($config, $options) {
            [$config['host'], $config['port']] = masterAddr($this->init);
            return $this->createClient(array_merge($config, $options, Arr::pull($config, 'options', [])));
        };
        return new PhpRedisConnection($connector(), $connector, $config);
    }
}

final class LaravelClient
{
    public string $library;
    private Requests $requests;
    private int $seconds;
    private int $sleepMs;

    private const WHY = [
        'nodes' => "Laravel's lock works on one Redis connection; it has no Redlock over independent masters",
        'cluster' => "php-redis's RedisCluster (Laravel's phpredis cluster connection) dials the addresses the cluster announces, bypassing the client's proxies",
    ];

    public function __construct(array $init, private Session $session)
    {
        requireLock($init, ['node', 'sentinel'], self::WHY);
        $o = options($init, ['seconds' => ABSENT, 'sleep_milliseconds' => 250, 'per_request' => true]);
        $this->seconds = $o['seconds'] === ABSENT ? (int) ceil($init['ttl_ms'] / 1000) : $o['seconds'];
        if (!is_int($this->seconds) || $this->seconds < 0) {
            throw new InitError('options.seconds: ' . json_encode($o['seconds']) . ' must be a whole number of seconds, 0 or more (Laravel takes whole seconds; 0: no expiry)');
        }
        $this->sleepMs = $o['sleep_milliseconds'];
        if (!is_int($this->sleepMs) || $this->sleepMs < 0) {
            throw new InitError('options.sleep_milliseconds: ' . json_encode($o['sleep_milliseconds']) . ' must be a whole number of milliseconds');
        }
        if ($init['connect'] === 'sentinel') {
            sentinelUsable($init); // refuse what php-redis's RedisSentinel cannot do now, not at the first call
        }
        $this->requests = new Requests(boolean($o, 'per_request'), fn () => $this->build($init), fn (RedisManager $m) => self::disconnect($m));
        $this->library = 'illuminate/cache ' . debianVersion('php-illuminate-cache') . ' (PhpRedisLock, illuminate/redis ' . debianVersion('php-illuminate-redis') . ', php-redis ' . phpversion('redis') . ')';
    }

    /**
     * The RedisManager a Laravel application's container makes (its
     * connection is made at the first command, as Laravel resolves it).
     */
    private function build(array $init): RedisManager
    {
        $manager = new RedisManager(null, 'phpredis', ['default' => $this->config($init)]);
        if ($init['connect'] === 'sentinel') {
            $manager->extend('tumbler-sentinel', fn () => new SentinelConnector($init));
            $manager->setDriver('tumbler-sentinel');
        }
        return $manager;
    }

    /** A request's end: its connections (those it made) are closed. */
    private static function disconnect(RedisManager $manager): void
    {
        foreach ($manager->connections() ?? [] as $c) {
            try {
                $c->disconnect();
            } catch (\Throwable $e) {
                log('closing a connection at the end of a request: ' . describe($e));
            }
        }
    }

    /** The connection's config as a Laravel app writes it in config/database.php (Laravel 8 reads no ACL user: the password is given as [user, password], which php-redis's auth takes). */
    private function config(array $init): array
    {
        $s = redisSettings($init);
        $c = ['timeout' => $s['timeout'], 'read_timeout' => $s['timeout']];
        if ($init['connect'] === 'node') {
            [$c['host'], $c['port']] = hostPort($init['nodes'][0]['addr']);
        }
        if ($s['auth'] !== null) {
            $c['password'] = $s['auth'];
        }
        if ($s['tls'] !== null) {
            $c['scheme'] = 'tls';
            $c['context'] = $s['tls'];
        }
        return $c;
    }

    public function handle(array $req): array
    {
        switch ($req['type']) {
            case 'acquire':
                return $this->acquire($req['key'], (int) $req['wait_ms']);
            case 'release':
                return $this->release($req['key'], $req['lease']['token']);
            case 'extend':
                throw new Fail("not extended: Laravel 8.83's locks cannot be extended (Illuminate\\Contracts\\Cache\\Lock offers get, block, release, owner and forceRelease; nothing renews a lock)");
        }
        throw new Fail("unsupported request {$req['type']}: this client drives a lock (acquire, release)");
    }

    /**
     * get() is one SET NX EX; block($seconds) retries it every
     * sleep_milliseconds until the wall clock, read in whole seconds
     * (InteractsWithTime::currentTime, Carbon), has moved $seconds past
     * its start — so a wait ends on second boundaries of the client's
     * wall clock, which a client-clock fault moves.
     */
    private function acquire(string $name, int $waitMs): array
    {
        $manager = $this->requests->open();
        try {
            $lock = $this->attempt(new RedisStore($manager, '', 'default'), $name, $waitMs);
        } catch (\Throwable $e) {
            $this->requests->close($manager);
            throw $e;
        }
        $owner = $lock->owner();
        $this->requests->hold($owner, $lock, $manager);
        // Laravel returned to its caller: nothing of the library runs
        // between the SET's reply and here.
        $this->session->step('granted', $name);
        return ['type' => 'ok', 'lease' => ['token' => $owner]];
    }

    /** The lock, once get() or block() got it; Fail when they did not. */
    private function attempt(RedisStore $store, string $name, int $waitMs): \Illuminate\Cache\Lock
    {
        $lock = $store->lock($name, $this->seconds);
        $lock->betweenBlockedAttemptsSleepFor($this->sleepMs);
        if ($waitMs <= 0) {
            $got = $lock->get();
        } else {
            try {
                $got = $lock->block($waitMs / 1000);
            } catch (LockTimeoutException $e) {
                throw new Fail('not acquired: LockTimeoutException (held by another owner until the wait ran out)');
            }
        }
        if (!$got) {
            throw new Fail('not acquired: held by another owner (get() returned false)');
        }
        return $lock;
    }

    private function release(string $name, string $owner): array
    {
        [$lock, $manager] = $this->requests->held($owner) ?? $this->restore($name, $owner);
        $ok = false;
        try {
            $ok = $lock->release();
        } finally {
            $this->requests->released($owner, $manager, $ok);
        }
        if (!$ok) {
            throw new Fail('not released: release() returned false (the key held another owner, or none)');
        }
        return ['type' => 'ok'];
    }

    /** [lock, request] for a lease a previous process of this client acquired: RedisStore::restoreLock, in a request of its own. */
    private function restore(string $name, string $owner): array
    {
        $manager = $this->requests->open();
        return [(new RedisStore($manager, '', 'default'))->restoreLock($name, $owner), $manager];
    }
}

serve(fn (array $init, Session $s) => new LaravelClient($init, $s));
