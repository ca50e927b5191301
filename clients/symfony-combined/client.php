<?php
// tumbler's client for Symfony's Redlock: a CombinedStore with the
// ConsensusStrategy over one RedisStore per node (php-symfony-lock,
// php-redis), speaking clients/PROTOCOL.md: see tumbler_symfony.php.
require __DIR__ . '/tumbler_client.php';
require __DIR__ . '/tumbler_symfony.php';

Tumbler\serve(fn (array $init, Tumbler\Session $s) => new Tumbler\SymfonyClient($init, $s, true));
