<?php
// __NAME__: a lock client for tumbler (clients/PROTOCOL.md), written by
// `tumbler client new`. It drives Symfony Lock's RedisStore (Debian's
// php-symfony-lock, over php-redis) on one Redis node. To put your own
// lock library under tumbler, replace the three calls marked LIBRARY with
// your library's, and keep the mapping of what it says to ok, fail and
// info.

require_once 'Symfony/Component/Lock/autoload.php';

use Symfony\Component\Lock\Exception\LockConflictedException;
use Symfony\Component\Lock\Key;
use Symfony\Component\Lock\Store\RedisStore;

$store = null;
$ttl = 0;
$steps = null;
$stepId = 0;

function write(array $v): void
{
    fwrite(STDOUT, json_encode($v, JSON_UNESCAPED_SLASHES) . "\n");
    fflush(STDOUT);
}

// step reports a step when init armed it and waits for tumbler's continue.
function step(string $name, string $key): void
{
    global $steps, $stepId;
    if ($steps !== null && !in_array($name, $steps, true)) {
        return;
    }
    write(['type' => 'step', 'id' => ++$stepId, 'step' => $name, 'key' => $key]);
    fgets(STDIN); // {"type": "continue", "in_reply_to": …}
}

// secret reads a password from the file or the variable init names.
function secret(array $s): string
{
    if (isset($s['file'])) {
        return rtrim(file_get_contents($s['file']), "\n");
    }
    $v = getenv($s['env']);
    if ($v === false) {
        throw new RuntimeException('the variable ' . $s['env'] . ' is not set');
    }
    return $v;
}

// lockKey is the lock on $name held with $token (the library's own token, as
// the lease carries it), or a new one.
function lockKey(string $name, ?string $token = null): Key
{
    $key = new Key($name);
    if ($token !== null) {
        $key->setState(RedisStore::class, $token);
    }
    return $key;
}

function acquire(string $name, int $waitMs): array
{
    global $store;
    $deadline = hrtime(true) + $waitMs * 1000000;
    for (;;) {
        $key = lockKey($name);
        try {
            $store->save($key); // LIBRARY: the lock library's acquire.
            step('acquired', $name);
            return ['type' => 'ok', 'lease' => ['token' => $key->getState(RedisStore::class)]];
        } catch (LockConflictedException $e) {
            if (hrtime(true) >= $deadline) {
                return ['type' => 'fail', 'error' => 'held by another owner', 'held' => true];
            }
            usleep(10000);
        }
    }
}

function release(string $name, string $token): array
{
    global $store;
    $key = lockKey($name, $token);
    // RedisStore::delete says nothing of a lease it no longer held: ask first.
    if (!$store->exists($key)) {
        return ['type' => 'fail', 'error' => 'not held'];
    }
    $store->delete($key); // LIBRARY: the lock library's release.
    return ['type' => 'ok'];
}

function extend(string $name, string $token, int $ttlMs): array
{
    global $store;
    try {
        $store->putOffExpiration(lockKey($name, $token), $ttlMs / 1000); // LIBRARY: the lock library's extend.
    } catch (LockConflictedException $e) {
        return ['type' => 'fail', 'error' => 'not held'];
    }
    return ['type' => 'ok', 'lease' => ['token' => $token]];
}

// open answers init: the node, the credentials (read from where init says
// they are), TLS, the TTL and the steps to report.
function open(array $req): array
{
    global $store, $ttl, $steps;
    if ($req['connect'] !== 'node') {
        return ['type' => 'fail', 'error' => 'connect ' . $req['connect'] . ': this client locks one node (connect node)'];
    }
    if (!empty($req['options'])) {
        return ['type' => 'fail', 'error' => 'options unknown: ' . implode(', ', array_keys($req['options']))];
    }
    $ttl = $req['ttl_ms'];
    $steps = $req['steps'] ?? null;
    $timeout = $req['read_timeout_ms'] / 1000;
    $i = strrpos($req['nodes'][0]['addr'], ':');
    $host = substr($req['nodes'][0]['addr'], 0, $i);
    $port = (int) substr($req['nodes'][0]['addr'], $i + 1);
    $context = null;
    if (isset($req['tls'])) {
        $t = $req['tls'];
        $host = 'tls://' . $host;
        $ssl = ['verify_peer' => empty($t['insecure_skip_verify']), 'verify_peer_name' => empty($t['insecure_skip_verify'])];
        foreach (['cafile' => 'ca_file', 'local_cert' => 'cert_file', 'local_pk' => 'key_file', 'peer_name' => 'server_name'] as $php => $field) {
            if (isset($t[$field])) {
                $ssl[$php] = $t[$field];
            }
        }
        $context = ['stream' => $ssl];
    }
    try {
        $redis = new Redis();
        $redis->connect($host, $port, $timeout, null, 0, $timeout, $context ?? []);
        if (isset($req['auth'])) {
            $pw = secret($req['auth']['password']);
            $redis->auth(isset($req['auth']['user']) ? [$req['auth']['user'], $pw] : $pw);
        }
        $store = new RedisStore($redis, $ttl / 1000); // each save holds the lock for the TTL
    } catch (Throwable $e) {
        return ['type' => 'fail', 'error' => get_class($e) . ': ' . $e->getMessage()];
    }
    return ['type' => 'ok', 'library' => '__NAME__ (Symfony Lock RedisStore over php-redis ' . phpversion('redis') . ')'];
}

function serve(array $req): array
{
    $lease = $req['lease'] ?? [];
    try {
        switch ($req['type']) {
            case 'init':
                return open($req);
            case 'acquire':
                return acquire($req['key'], $req['wait_ms']);
            case 'release':
                return release($req['key'], $lease['token'] ?? '');
            case 'extend':
                return extend($req['key'], $lease['token'] ?? '', $req['ttl_ms']);
        }
        return ['type' => 'fail', 'error' => 'unsupported request ' . $req['type']];
    } catch (Throwable $e) { // it may have taken effect
        return ['type' => 'info', 'error' => get_class($e) . ': ' . $e->getMessage()];
    }
}

while (($line = fgets(STDIN)) !== false) {
    $req = json_decode($line, true);
    $rep = serve($req);
    $rep['in_reply_to'] = $req['id'];
    write($rep);
}
