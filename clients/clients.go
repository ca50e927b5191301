// Package clients are the lock client programs tumbler ships: one
// directory each (clients/<name>/), with its manifest, client.json, and
// the program, speaking the lock client protocol of PROTOCOL.md. They are
// embedded in tumbler and handed to package lock/protocol (ShipClients),
// whose one loader reads them as it reads a client directory of your own
// on disk, and installed into tumbler's cache when a run uses one, so a
// run needs nothing but tumbler and the library's Debian packages. A
// directory whose name starts with "_" is not a client: "_shared" holds
// files several clients share (a manifest's "shared"), installed beside
// each client's own. The package also writes new client directories
// (Scaffold: `tumbler client new`).
package clients

import (
	"embed"

	"github.com/tumbler-dev/tumbler/lock/protocol"
)

//go:embed */*
var files embed.FS

func init() { protocol.ShipClients(files) }
