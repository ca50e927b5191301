<?php
// What tumbler's PHP lock clients share (clients/PROTOCOL.md): the request
// loop, steps, options, secrets, and php-redis connections from init — to
// one node, or to the primary the Sentinels name, through the client's
// address map. Installed beside each client's program (a manifest's
// "shared" files).

namespace Tumbler;

// stdout carries the protocol only: PHP's own warnings go to stderr
// whatever php.ini says.
ini_set('display_errors', 'stderr');

/** The call certainly had no effect: reply fail. */
class Fail extends \Exception {}

/** init cannot be served with these settings: reply fail. */
class InitError extends \Exception {}

/** The call may have had an effect though the library said it failed: info. */
class Unknown extends \Exception {}

const ABSENT = "\0absent";

function log(string $msg): void
{
    fwrite(STDERR, $msg . "\n");
    fflush(STDERR);
}

/** An exception's class and message, with the ones it wraps. */
function describe(\Throwable $e): string
{
    $parts = [];
    for (; $e !== null; $e = $e->getPrevious()) {
        $parts[] = get_class($e) . ': ' . $e->getMessage();
    }
    return implode(' <- ', $parts);
}

/** The version dpkg has of a Debian package, or "?". */
function debianVersion(string $package): string
{
    $v = @shell_exec('dpkg-query -W -f \'${Version}\' ' . escapeshellarg($package) . ' 2>/dev/null');
    return is_string($v) && $v !== '' ? $v : '?';
}

final class Session
{
    private int $stepId = 0;
    /** @var ?string[] the steps tumbler may stop at (init's "steps"); null: all */
    public ?array $steps = null;

    public function send(array $msg): void
    {
        fwrite(STDOUT, json_encode($msg, JSON_UNESCAPED_SLASHES) . "\n");
        fflush(STDOUT);
    }

    /** Reports a step and waits for tumbler's continue (only a step init's "steps" names, when it names them). */
    public function step(string $name, string $key): void
    {
        if ($this->steps !== null && !in_array($name, $this->steps, true)) {
            return;
        }
        $id = ++$this->stepId;
        $this->send(['type' => 'step', 'id' => $id, 'step' => $name, 'key' => $key]);
        while (($line = fgets(STDIN)) !== false) {
            $msg = json_decode($line, true);
            if (($msg['type'] ?? '') === 'continue' && ($msg['in_reply_to'] ?? 0) === $id) {
                return;
            }
            log("ignored while at step $name: " . trim($line));
        }
        exit(0); // stdin closed: the run is over
    }
}

/**
 * Serves requests until stdin closes. $open($init, $session) returns a
 * client with a public $library and handle(array $request): array (the
 * reply); handle throws Fail when the call certainly had no effect, anything
 * else is an unknown outcome (info).
 */
function serve(callable $open): void
{
    $session = new Session();
    $client = null;
    while (($line = fgets(STDIN)) !== false) {
        $req = json_decode($line, true);
        try {
            if ($req['type'] === 'init') {
                $client = null;
                $session->steps = $req['steps'] ?? null;
                $client = $open($req, $session);
                $rep = ['type' => 'ok', 'library' => $client->library];
            } elseif ($client === null) {
                $rep = ['type' => 'fail', 'error' => 'no init before ' . $req['type']];
            } else {
                $rep = $client->handle($req);
            }
        } catch (Fail $e) {
            $rep = ['type' => 'fail', 'error' => $e->getMessage()];
        } catch (\Throwable $e) { // init: it cannot run; a call: unknown outcome
            $rep = ['type' => $req['type'] === 'init' ? 'fail' : 'info', 'error' => describe($e)];
            log($req['type'] . ' ' . ($req['key'] ?? '') . ': ' . $rep['error']);
        }
        $rep['in_reply_to'] = $req['id'];
        $session->send($rep);
    }
}

/** Refuses a kind other than lock and a connect mode the library cannot do ($why: mode → reason). */
function requireLock(array $init, array $modes, array $why): void
{
    if ($init['kind'] !== 'lock') {
        throw new InitError("kind {$init['kind']}: this client drives a lock (kind lock) only");
    }
    if (!in_array($init['connect'], $modes, true)) {
        throw new InitError("connect {$init['connect']}: " . ($why[$init['connect']] ?? 'not supported'));
    }
}

/** The init's options over $known (name → default, ABSENT for one derived from init); unknown ones are refused. */
function options(array $init, array $known): array
{
    $given = $init['options'] ?? [];
    $unknown = array_diff(array_keys($given), array_keys($known));
    sort($unknown);
    if ($unknown) {
        $names = array_keys($known);
        sort($names);
        throw new InitError('options unknown: ' . implode(', ', $unknown) . ' (this client takes: ' . implode(', ', $names) . ')');
    }
    return array_merge($known, $given);
}

/** options.$name as a number above $min (or null when $null). */
function number(array $o, string $name, float $min = 0.0, bool $null = false): ?float
{
    $v = $o[$name];
    if ($v === null && $null) {
        return null;
    }
    if (!is_int($v) && !is_float($v) || $v <= $min) {
        throw new InitError("options.$name: " . json_encode($v) . " must be a number above $min" . ($null ? ' or null' : ''));
    }
    return (float) $v;
}

/** options.$name as true or false. */
function boolean(array $o, string $name): bool
{
    if (!is_bool($o[$name])) {
        throw new InitError("options.$name: " . json_encode($o[$name]) . ' must be true or false');
    }
    return $o[$name];
}

function secret(array $where): string
{
    if (!empty($where['file'])) {
        $s = @file_get_contents($where['file']);
        if ($s === false) {
            throw new InitError("auth.password: cannot read {$where['file']}");
        }
        return rtrim($s, "\n");
    }
    if (!empty($where['env'])) {
        $s = getenv($where['env']);
        if ($s === false) {
            throw new InitError("auth.password: environment variable {$where['env']} is not set");
        }
        return $s;
    }
    throw new InitError('auth.password names neither a file nor an environment variable');
}

/** [host, port] of "host:port". */
function hostPort(string $addr): array
{
    $i = strrpos($addr, ':');
    return [substr($addr, 0, $i), (int) substr($addr, $i + 1)];
}

/** Where the client dials an address a server announced: through init's address_map (refused if it is not there; as is without a map). */
function route(array $init, string $host, int $port): array
{
    $map = $init['address_map'] ?? [];
    if (!$map) {
        return [$host, $port];
    }
    if (!isset($map["$host:$port"])) {
        throw new \RedisException("Sentinel announced $host:$port, which init's address_map does not route");
    }
    return hostPort($map["$host:$port"]);
}

/** Settings for php-redis from init: timeouts (s), auth, TLS stream context. */
function redisSettings(array $init): array
{
    $s = ['timeout' => ($init['read_timeout_ms'] ?? 0) / 1000, 'auth' => null, 'tls' => null];
    $auth = $init['auth'] ?? [];
    if (!empty($auth['password'])) {
        $pass = secret($auth['password']);
        $s['auth'] = empty($auth['user']) ? $pass : [$auth['user'], $pass];
    }
    if ($tls = $init['tls'] ?? null) {
        $insecure = !empty($tls['insecure_skip_verify']);
        $ssl = ['verify_peer' => !$insecure, 'verify_peer_name' => !$insecure];
        foreach (['cafile' => 'ca_file', 'local_cert' => 'cert_file', 'local_pk' => 'key_file', 'peer_name' => 'server_name'] as $php => $ours) {
            if (!empty($tls[$ours])) {
                $ssl[$php] = $tls[$ours];
            }
        }
        $s['tls'] = ['stream' => $ssl];
    }
    return $s;
}

/**
 * The primary's address as the Sentinels name it, routed through the
 * address map. It asks each Sentinel in turn, as Symfony's RedisTrait does
 * for a redis_sentinel DSN with php-redis: RedisSentinel(host, port,
 * timeout, persistent, retry_interval, read_timeout), getMasterAddrByName.
 * php-redis 5.3.7's RedisSentinel takes no AUTH and no TLS.
 */
function masterAddr(array $init): array
{
    sentinelUsable($init);
    $t = ($init['read_timeout_ms'] ?? 0) / 1000;
    $errors = [];
    foreach ($init['sentinels'] as $addr) {
        [$host, $port] = hostPort($addr);
        try {
            $s = new \RedisSentinel($host, $port, $t, null, 0, $t);
            if ($a = $s->getMasterAddrByName($init['master_name'])) {
                return route($init, $a[0], (int) $a[1]);
            }
            $errors[] = "$addr: no primary named {$init['master_name']}";
        } catch (\RedisException $e) {
            $errors[] = "$addr: " . $e->getMessage();
        }
    }
    throw new \RedisException('no Sentinel named a primary: ' . implode('; ', $errors));
}

/** Refuses connect sentinel with what php-redis's RedisSentinel cannot do (at init, before anything connects). */
function sentinelUsable(array $init): void
{
    if (!empty($init['auth']) || !empty($init['tls'])) {
        throw new InitError('connect sentinel with auth or tls: php-redis ' . phpversion('redis') . "'s RedisSentinel takes neither (its constructor: host, port, timeout, persistent, retry_interval, read_timeout)");
    }
}

/** Connects $r to host:port with init's read timeout, auth and TLS. */
function connectTo(\Redis $r, array $init, string $host, int $port): \Redis
{
    $s = redisSettings($init);
    $h = $s['tls'] ? "tls://$host" : $host;
    if ($s['tls']) {
        $r->connect($h, $port, $s['timeout'], null, 0, $s['timeout'], $s['tls']);
    } else {
        $r->connect($h, $port, $s['timeout'], null, 0, $s['timeout']);
    }
    if ($s['auth'] !== null) {
        $r->auth($s['auth']);
    }
    return $r;
}

/**
 * A php-redis connection made at its first use and, while that fails,
 * again at each use: what Symfony's StoreFactory gives a store built from
 * a DSN (AbstractAdapter::createConnection with lazy: true, a RedisProxy
 * whose initializer runs on every call until it has succeeded). Where it
 * connects is decided then: $where returns [host, port] — the node, or the
 * primary the Sentinels name at that moment (RedisTrait asks them inside
 * the initializer). Once connected, php-redis keeps that address. It
 * intercepts the calls Symfony's RedisStore makes (clearLastError, eval,
 * getLastError); any other call on it before it connected fails as
 * php-redis fails on a connection it never made.
 */
final class LazyRedis extends \Redis
{
    private bool $ready = false;

    public function __construct(private array $init, private \Closure $where)
    {
        parent::__construct();
    }

    private function ready(): void
    {
        if (!$this->ready) {
            [$host, $port] = ($this->where)();
            connectTo($this, $this->init, $host, $port);
            $this->ready = true;
        }
    }

    public function clearLastError()
    {
        $this->ready();
        return parent::clearLastError();
    }

    public function eval($script, $args = [], $numKeys = 0)
    {
        $this->ready();
        return parent::eval($script, $args, $numKeys);
    }

    public function getLastError()
    {
        $this->ready();
        return parent::getLastError();
    }
}

/** A lazy php-redis connection (LazyRedis) to the node at $addr. */
function lazyNode(array $init, string $addr): LazyRedis
{
    return new LazyRedis($init, fn () => hostPort($addr));
}

/** A lazy php-redis connection (LazyRedis) to init's node, or to the primary its Sentinels name when it connects. */
function redisFor(array $init): LazyRedis
{
    if ($init['connect'] === 'sentinel') {
        sentinelUsable($init);
        return new LazyRedis($init, fn () => masterAddr($init));
    }
    return lazyNode($init, $init['nodes'][0]['addr']);
}

/**
 * The life of a PHP application's objects: under PHP-FPM (or mod_php)
 * every HTTP request runs the application anew — its container builds the
 * lock's store and the store's connection (and so asks the Sentinels
 * again), and the end of the request closes the connection. With
 * per_request, each acquire…release cycle is such a request: $build makes
 * its objects at the acquire, $end closes them after the release, or after
 * an acquire that did not get the lock. Without it — a long-running worker
 * (a Messenger consumer, queue:work, Octane) — the objects $build made at
 * the first call serve every call.
 */
final class Requests
{
    private mixed $shared = null;
    /** @var array<string, array{0: mixed, 1: mixed}> lease token → [the lock that acquired it, its request] */
    private array $held = [];

    public function __construct(public readonly bool $perRequest, private \Closure $build, private \Closure $end) {}

    /** The objects a new request builds (per_request), or the shared ones. */
    public function open(): mixed
    {
        if (!$this->perRequest) {
            return $this->shared ??= ($this->build)();
        }
        return ($this->build)();
    }

    /** Ends a request that holds nothing (an acquire that did not get the lock, or failed). */
    public function close(mixed $request): void
    {
        if ($this->perRequest) {
            ($this->end)($request);
        }
    }

    public function hold(string $token, mixed $lock, mixed $request): void
    {
        $this->held[$token] = [$lock, $request];
    }

    /** [lock, request] of a lease this process acquired, or null. */
    public function held(string $token): ?array
    {
        return $this->held[$token] ?? null;
    }

    /**
     * After a release of the lease: the request ends (per_request) and the
     * lease is forgotten; a long-running worker forgets it only once
     * released, so a release that failed can be tried again on its lock.
     */
    public function released(string $token, mixed $request, bool $ok): void
    {
        if ($this->perRequest || $ok) {
            unset($this->held[$token]);
        }
        $this->close($request);
    }
}
