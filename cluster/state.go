package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tumbler-dev/tumbler/internal/statedir"
)

// StateDir is where clusters leave a record of the processes they start
// and reserve their ports, so that another run can clean up after one that
// was killed: $XDG_RUNTIME_DIR/tumbler when that is usable, else
// os.TempDir()/tumbler-<uid>.
func StateDir() string { return statedir.Dir() }

// record is the on-disk list of the processes one provider started, named
// <owner pid>-<random>.json under StateDir()/procs. Start times (clock ticks
// since boot, /proc/<pid>/stat field 22) guard against killing a process
// that merely reuses a recorded pid.
type record struct {
	Owner      int           `json:"owner"`
	OwnerStart uint64        `json:"owner_start"`
	RemoveDirs []string      `json:"remove_dirs,omitempty"`
	Procs      []recordEntry `json:"procs"`
	// DockerRun is the DockerRunLabel value of a DockerProvider's
	// containers and network, which a sweep removes.
	DockerRun string `json:"docker_run,omitempty"`

	path string
	mu   sync.Mutex
}

type recordEntry struct {
	Name  string `json:"name"`
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"`
}

func newRecord() (*record, error) {
	dir := filepath.Join(StateDir(), "procs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state dir for the process record: %w", err)
	}
	start, err := procStart(os.Getpid())
	if err != nil {
		return nil, err
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	r := &record{
		Owner:      os.Getpid(),
		OwnerStart: start,
		path:       filepath.Join(dir, fmt.Sprintf("%d-%s.json", os.Getpid(), hex.EncodeToString(b[:]))),
	}
	return r, r.save()
}

func (r *record) add(name string, pid int) {
	start, err := procStart(pid)
	if err != nil {
		return // already gone: nothing to sweep later
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Procs = append(r.Procs, recordEntry{Name: name, Pid: pid, Start: start})
	_ = r.save()
}

func (r *record) remove(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, e := range r.Procs {
		if e.Pid == pid {
			r.Procs = append(r.Procs[:i], r.Procs[i+1:]...)
			break
		}
	}
	_ = r.save()
}

func (r *record) setDockerRun(run string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.DockerRun = run
	return r.save()
}

func (r *record) removeDirOnSweep(dir string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.RemoveDirs = append(r.RemoveDirs, dir)
	_ = r.save()
}

// save writes the record atomically; callers hold r.mu (or own r alone).
func (r *record) save() error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write process record: %w", err)
	}
	return os.Rename(tmp, r.path)
}

func (r *record) delete() {
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = os.Remove(r.path)
}

// SweepOrphans kills the processes recorded by clusters whose owner process
// is gone (killed with SIGKILL, say, before Close could run), removes their
// Docker containers and networks, their temporary directories and records,
// and returns the pids it killed. Start calls it; so can a CLI at
// start-up. What live owners run is left alone. A record whose containers
// could not be removed (the daemon down) is kept for the next sweep.
func SweepOrphans() ([]int, error) {
	dir := filepath.Join(StateDir(), "procs")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sweep orphans: %w", err)
	}
	var killed []int
	var errs []error
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			continue // removed meanwhile by its owner
		}
		var r record
		if err := json.Unmarshal(b, &r); err != nil {
			errs = append(errs, fmt.Errorf("sweep orphans: unreadable record %s removed: %w", path, err))
			_ = os.Remove(path)
			continue
		}
		if alive(r.Owner, r.OwnerStart) {
			continue
		}
		if r.DockerRun != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err := removeDockerRun(ctx, r.DockerRun)
			cancel()
			if err != nil {
				errs = append(errs, fmt.Errorf("sweep orphans: docker run %s of dead owner %d: %w", r.DockerRun, r.Owner, err))
				continue
			}
		}
		for _, p := range r.Procs {
			if !alive(p.Pid, p.Start) {
				continue
			}
			// Each process leads its own group (Setpgid), so this also
			// ends anything it forked (a BGSAVE or AOF-rewrite child).
			_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
			_ = syscall.Kill(p.Pid, syscall.SIGKILL)
			killed = append(killed, p.Pid)
		}
		for _, d := range r.RemoveDirs {
			_ = os.RemoveAll(d)
		}
		_ = os.Remove(path)
	}
	return killed, errors.Join(errs...)
}

// procStart is the start time of pid in clock ticks since boot.
func procStart(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may contain spaces and parentheses; the
	// fields after the last ')' are fixed. starttime is field 22.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, fmt.Errorf("process %d is a zombie", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// alive reports whether pid runs and is the process that started at start.
func alive(pid int, start uint64) bool {
	s, err := procStart(pid)
	return err == nil && s == start
}

// portLock reserves a TCP port on 127.0.0.1 across tumbler processes: an
// flock on StateDir()/ports/<port>.lock held for the cluster's lifetime.
// A node keeps its port while it is down (its proxies point there), and
// the lock keeps other clusters — in other test binaries running at the
// same time — from taking it meanwhile. The kernel drops the lock when the
// owner dies.
type portLock struct {
	port int
	f    *os.File
}

// reservePort picks a free port outside the kernel's ephemeral range (which
// every outgoing connection and every listener on port 0 draws from, and
// which would not respect our reservation), locks it and checks that it
// binds. Nodes and the harness's own proxies listen on such ports.
func reservePort() (*portLock, error) {
	dir := filepath.Join(StateDir(), "ports")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("reserve port: %w", err)
	}
	lo, hi := portRange()
	for attempt := 0; attempt < 200; attempt++ {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(hi-lo+1)))
		port := lo + int(n.Int64())
		if l := lockPort(dir, port); l != nil {
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err == nil {
				_ = ln.Close()
				return l, nil
			}
			l.release()
		}
	}
	return nil, fmt.Errorf("reserve port: no free port in %d-%d after 200 attempts", lo, hi)
}

func lockPort(dir string, port int) *portLock {
	path := filepath.Join(dir, strconv.Itoa(port)+".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil
	}
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		_ = f.Close()
		return nil
	}
	// The previous holder may have unlinked the file between our open and
	// our lock; then we locked an orphaned inode and someone else may
	// hold the new one.
	var held, named unix.Stat_t
	if unix.Fstat(int(f.Fd()), &held) != nil || unix.Stat(path, &named) != nil || held.Ino != named.Ino {
		_ = f.Close()
		return nil
	}
	return &portLock{port: port, f: f}
}

func (l *portLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = os.Remove(l.f.Name()) // unlink while still locked, see lockPort
	_ = l.f.Close()
	l.f = nil
}

func portRange() (lo, hi int) {
	eLo, eHi := 32768, 60999
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 {
			a, err1 := strconv.Atoi(f[0])
			b, err2 := strconv.Atoi(f[1])
			if err1 == nil && err2 == nil && a <= b {
				eLo, eHi = a, b
			}
		}
	}
	if eLo-1-10000 >= 2000 {
		return 10000, eLo - 1
	}
	if 65535-eHi >= 2000 {
		return eHi + 1, 65535
	}
	return 1024, 65535 // no room outside: bind-check and the lock still hold
}
