// Package procgroup ends the processes tumbler starts, with everything
// they started in turn: a lock client program run by the harness has a
// process group of its own, a client worker's group holds its lock client
// program, and both are killed as groups. Track records a group for the
// one exit path that skips every deferred cleanup — a second Ctrl-C, which
// quits at once (KillAll before os.Exit) — so that no client process, nor
// a process a client started (sh -c '…'), outlives tumbler. KillTree ends
// a program that shares its parent's group (a worker's), with its
// descendants.
package procgroup

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

var (
	mu     sync.Mutex
	groups = map[int]int{} // pgid → how many tracked it
)

// Track records the process group pgid as one KillAll kills; forget
// drops it (once the group was killed or ended).
func Track(pgid int) (forget func()) {
	mu.Lock()
	groups[pgid]++
	mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			if groups[pgid]--; groups[pgid] <= 0 {
				delete(groups, pgid)
			}
		})
	}
}

// Kill SIGKILLs the process group pgid (ESRCH, an empty group, is no
// error).
func Kill(pgid int) error {
	if pgid <= 1 {
		return nil
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
		return err
	}
	return nil
}

// KillAll SIGKILLs every tracked group: what a process quitting at once
// calls before it exits.
func KillAll() {
	mu.Lock()
	defer mu.Unlock()
	for pgid := range groups {
		_ = Kill(pgid)
	}
}

// KillTree SIGKILLs pid and every process descended from it, as /proc
// shows them now: for a program that shares its parent's process group,
// so that what it started does not outlive it. Its descendants are
// stopped first, so that none forks anew while the tree is read.
func KillTree(pid int) {
	tree := descendants(pid)
	for _, p := range tree {
		_ = syscall.Kill(p, syscall.SIGSTOP)
	}
	tree = append(descendants(pid), pid)
	for _, p := range tree {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

// descendants are the processes below pid.
func descendants(pid int) []int {
	children := map[int][]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		s := string(b)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if len(fields) < 2 {
			continue
		}
		child, err1 := strconv.Atoi(strings.Fields(s)[0])
		parent, err2 := strconv.Atoi(fields[1])
		if err1 == nil && err2 == nil {
			children[parent] = append(children[parent], child)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}
