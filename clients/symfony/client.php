<?php
// tumbler's client for Symfony's Lock over one RedisStore (php-symfony-lock,
// php-redis), speaking clients/PROTOCOL.md: see tumbler_symfony.php.
require __DIR__ . '/tumbler_client.php';
require __DIR__ . '/tumbler_symfony.php';

Tumbler\serve(fn (array $init, Tumbler\Session $s) => new Tumbler\SymfonyClient($init, $s, false));
