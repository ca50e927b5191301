<?php
// A lock client for tumbler (clients/PROTOCOL.md) driving php-lock/lock's
// PHPRedisMutex (Debian php-malkusch-lock, over php-redis): the library's
// Redlock over every node it is given, one php-redis connection per node.
// It lives outside clients/ as a client directory of tumbler's own tests,
// loaded from disk (--client contrib/clients/php-lock), never embedded.
//
// An application calls $mutex->synchronized($code): the library's lock()
// (a spin loop that tries its Redlock acquire until its timeout), the
// code, then unlock() (which throws ExecutionOutsideLockException when the
// code took longer than the timeout, and otherwise deletes the keys). The
// protocol splits that call into an acquire and a release, so this client
// calls the same lock() and unlock() through a subclass (Mutex, below) and
// keeps the mutex object between the two, as synchronized() does on its
// stack. Each acquire…release cycle is one PHP-FPM request: the
// connections are made for it (at their first use, inside the library's
// calls) and closed at its end.

namespace Tumbler;

require __DIR__ . '/tumbler_client.php';
require_once 'Malkusch/Lock/autoload.php';

use malkusch\lock\exception\ExecutionOutsideLockException;
use malkusch\lock\exception\LockReleaseException;
use malkusch\lock\exception\TimeoutException;
use malkusch\lock\mutex\PHPRedisMutex;
use malkusch\lock\mutex\SpinlockMutex;
use malkusch\lock\mutex\RedisMutex;

/**
 * PHPRedisMutex with synchronized()'s two halves callable one at a time:
 * enter() is its lock() (the library's loop, which waits up to the
 * mutex's timeout), once() is one pass of that loop's body (the start
 * taken for unlock's check, then one Redlock acquire), leave() its
 * unlock(). The library's private state (the token, the start) is read
 * and set in its own class scope, never computed here.
 */
final class Mutex extends PHPRedisMutex
{
    public function enter(): void
    {
        $this->lock();
    }

    public function once(): bool
    {
        return $this->spin(function (): bool {
            $this->acquired = microtime(true);
            return $this->acquire($this->key, $this->timeout + 1);
        });
    }

    /** Bound to SpinlockMutex's scope, where its private fields are. */
    private function spin(\Closure $f): mixed
    {
        return \Closure::bind($f, $this, SpinlockMutex::class)();
    }

    public function leave(): void
    {
        $this->unlock();
    }

    public function token(): string
    {
        return \Closure::bind(fn () => $this->token, $this, RedisMutex::class)();
    }

    /** A lease of another process of this client: its token, and the start unknown (now). */
    public function adopt(string $token): void
    {
        \Closure::bind(function () use ($token) { $this->token = $token; }, $this, RedisMutex::class)();
        $this->spin(function () { $this->acquired = microtime(true); });
    }
}

/**
 * The library's logger: it logs a warning for each server whose SET or
 * release script failed (an exception of php-redis: a timeout, a lost
 * connection) and counts it as not set, not deleted. Such a command may
 * have taken effect, so a call with any is an unknown outcome.
 */
final class ServerErrors extends \Psr\Log\AbstractLogger
{
    public array $seen = [];

    public function log($level, $message, array $context = array())
    {
        $e = $context['exception'] ?? null;
        $this->seen[] = strtr((string) $message, ['{key}' => $context['key'] ?? '', '{token}' => $context['token'] ?? '', '{index}' => $context['index'] ?? '']) . ($e ? ' (' . describe($e) . ')' : '');
    }
}

/**
 * A php-redis connection made at its first use inside the library's calls
 * (the SET, or the release's EVAL and the serializing of its token), so
 * that a node that cannot be reached fails inside the library's call,
 * which counts it as one server failed. A connection that failed is not
 * tried again within the request: its later commands fail the same way.
 * The library asks a connection for its serializer and compression before
 * the release's EVAL; on one that could not connect, the answer is what
 * this client set (nothing: no serializer, no compression), and the EVAL
 * then fails inside the library's own handling.
 */
final class Node extends \Redis
{
    private bool $ready = false;
    private ?\RedisException $failed = null;

    public function __construct(private array $init, private string $addr)
    {
        parent::__construct();
    }

    private function ready(): void
    {
        if ($this->ready) {
            return;
        }
        if ($this->failed !== null) {
            throw $this->failed;
        }
        [$host, $port] = hostPort($this->addr);
        try {
            connectTo($this, $this->init, $host, $port);
        } catch (\RedisException $e) {
            $this->failed = $e;
            throw $e;
        }
        $this->ready = true;
    }

    public function set($key, $value, $options = null)
    {
        $this->ready();
        return parent::set($key, $value, $options);
    }

    public function eval($script, $args = [], $numKeys = 0)
    {
        $this->ready();
        return parent::eval($script, $args, $numKeys);
    }

    public function _serialize($value)
    {
        try {
            $this->ready();
        } catch (\RedisException $e) {
            return $value;
        }
        return parent::_serialize($value);
    }

    public function getOption($option)
    {
        try {
            $this->ready();
        } catch (\RedisException $e) {
            return 0;
        }
        return parent::getOption($option);
    }

    public function end(): void
    {
        if ($this->ready) {
            try {
                $this->close();
            } catch (\Throwable $e) {
                log('closing a connection at the end of a request: ' . describe($e));
            }
        }
    }
}

final class PhpLockClient
{
    public string $library;
    private int $seconds;
    /** @var array<string, array{0: Mutex, 1: Node[], 2: ServerErrors}> lease token → the mutex that acquired it, its request's connections and its logger */
    private array $held = [];

    public function __construct(private array $init, private Session $session)
    {
        requireLock($init, ['nodes', 'node'], []);
        options($init, []);
        if ($init['ttl_ms'] % 1000 !== 0) {
            throw new InitError("ttl_ms {$init['ttl_ms']}: php-lock's mutex takes its timeout in whole seconds (PHPRedisMutex's int \$timeout); give a TTL of whole seconds");
        }
        $this->seconds = intdiv($init['ttl_ms'], 1000);
        $this->library = 'php-lock/lock ' . debianVersion('php-malkusch-lock') . ' (PHPRedisMutex, php-redis ' . phpversion('redis') . ')';
    }

    /** One request's mutex on $key over fresh connections to every node. */
    private function open(string $key): array
    {
        $nodes = [];
        foreach ($this->init['nodes'] as $n) {
            $nodes[] = new Node($this->init, $n['addr']);
        }
        $mutex = new Mutex($nodes, $key, $this->seconds); // stored in Redis as "lock_" . $key
        $errors = new ServerErrors();
        $mutex->setLogger($errors);
        return [$mutex, $nodes, $errors];
    }

    private static function close(array $nodes): void
    {
        foreach ($nodes as $n) {
            $n->end();
        }
    }

    public function handle(array $req): array
    {
        switch ($req['type']) {
            case 'acquire':
                return $this->acquire($req['key'], (int) ($req['wait_ms'] ?? 0));
            case 'release':
                return $this->release($req['key'], (string) ($req['lease']['token'] ?? ''));
            case 'extend':
                throw new Fail("not extended: php-lock's mutexes cannot be extended (Mutex offers synchronized() and check(); the lock lives its timeout)");
        }
        throw new Fail("unsupported request {$req['type']}: this client drives a lock (acquire, release)");
    }

    /**
     * wait_ms 0: one pass of the library's loop; otherwise the library's
     * own lock(), which waits up to the mutex's timeout (the TTL) whatever
     * wait_ms says: php-lock has no other wait.
     */
    private function acquire(string $key, int $waitMs): array
    {
        [$mutex, $nodes, $errors] = $this->open($key);
        try {
            if ($waitMs <= 0) {
                $got = $mutex->once();
            } else {
                $mutex->enter();
                $got = true;
            }
        } catch (TimeoutException $e) {
            $got = false;
            $why = describe($e);
        } catch (\Throwable $e) { // LockAcquireException: too many servers failed, the SETs may have landed
            self::close($nodes);
            throw $e;
        }
        if (!$got) {
            self::close($nodes);
            $why ??= 'not acquired: the library found no majority of the nodes, or took longer than its timeout + 1 s';
            if ($errors->seen) { // a SET that failed may have landed
                return ['type' => 'info', 'error' => $why . '; ' . implode('; ', $errors->seen)];
            }
            return ['type' => 'fail', 'error' => $why];
        }
        $token = $mutex->token();
        $this->held[$token] = [$mutex, $nodes, $errors];
        $this->session->step('granted', $key);
        return ['type' => 'ok', 'lease' => ['token' => $token]];
    }

    /**
     * unlock(): ExecutionOutsideLockException when the code took longer
     * than the timeout by the client's clock (nothing is deleted); else the
     * keys are deleted by their token, and LockReleaseException when no
     * majority of the nodes deleted one.
     */
    private function release(string $key, string $token): array
    {
        [$mutex, $nodes, $errors] = $this->held[$token] ?? [null, null, null];
        unset($this->held[$token]);
        if ($mutex === null) { // a lease of a previous process of this client, or not ours
            [$mutex, $nodes, $errors] = $this->open($key);
            $mutex->adopt($token);
        }
        $errors->seen = [];
        try {
            $mutex->leave();
            return ['type' => 'ok'];
        } catch (ExecutionOutsideLockException $e) { // thrown before anything is sent
            return ['type' => 'fail', 'error' => describe($e)];
        } catch (LockReleaseException $e) {
            if ($errors->seen) { // a delete that failed may have landed
                return ['type' => 'info', 'error' => describe($e) . '; ' . implode('; ', $errors->seen)];
            }
            return ['type' => 'fail', 'error' => describe($e)];
        } finally {
            self::close($nodes);
        }
    }
}

serve(fn (array $init, Session $s) => new PhpLockClient($init, $s));
