package cluster

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

//go:embed clockshim/clockshim.c
var clockShimSource []byte

// ClockShimEnv names the environment variable that tells the clock shim
// which offset file to map.
const ClockShimEnv = "TUMBLER_CLOCK_FILE"

// ClockShimSource is the C source of the clock shim (clockshim/clockshim.c),
// for images that build it themselves.
func ClockShimSource() []byte { return append([]byte(nil), clockShimSource...) }

var shimBuild struct {
	once sync.Once
	path string
	err  error
}

// BuildClockShim compiles the clock shim with cc on first use and returns
// the path of the shared library. The result is cached under
// os.UserCacheDir()/tumbler, keyed by a hash of the source, so a machine
// compiles each version once; concurrent builders each write their own
// file and rename it into place.
func BuildClockShim() (string, error) {
	shimBuild.once.Do(func() { shimBuild.path, shimBuild.err = buildClockShim() })
	return shimBuild.path, shimBuild.err
}

func buildClockShim() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = filepath.Join(os.TempDir(), "tumbler-cache-"+strconv.Itoa(os.Getuid()))
	}
	return compileClockShim(filepath.Join(cache, "tumbler"))
}

// compileClockShim builds the library into dir unless it is there already.
func compileClockShim(dir string) (string, error) {
	sum := sha256.Sum256(clockShimSource)
	lib := filepath.Join(dir, "clockshim-"+hex.EncodeToString(sum[:8])+".so")
	if _, err := os.Stat(lib); err == nil {
		return lib, nil
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		return "", fmt.Errorf("build clock shim: no C compiler (cc) on PATH: install the Debian package gcc (apt-get install gcc libc6-dev)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("build clock shim: %w", err)
	}
	work, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", fmt.Errorf("build clock shim: %w", err)
	}
	defer os.RemoveAll(work)
	src := filepath.Join(work, "clockshim.c")
	if err := os.WriteFile(src, clockShimSource, 0o644); err != nil {
		return "", fmt.Errorf("build clock shim: %w", err)
	}
	out := filepath.Join(work, "clockshim.so")
	if b, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", out, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("build clock shim: cc failed: %v: %s", err, b)
	}
	if err := os.Rename(out, lib); err != nil {
		return "", fmt.Errorf("build clock shim: %w", err)
	}
	return lib, nil
}

// clockFile is a node's clock offset: one int64 of nanoseconds, in a file
// that the shim inside the node maps shared, so a store here is seen by the
// node's next clock read.
type clockFile struct {
	mem  []byte
	word *int64
}

func openClockFile(path string) (*clockFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("clock file: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, fmt.Errorf("clock file: %w", err)
	} else if st.Size() != 8 {
		if err := f.Truncate(8); err != nil {
			return nil, fmt.Errorf("clock file: %w", err)
		}
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, 8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("clock file: mmap %s: %w", path, err)
	}
	// The mapping is page-aligned, so the word is 8-byte aligned and the
	// store below is a single atomic instruction the shim's load pairs with.
	return &clockFile{mem: mem, word: (*int64)(unsafe.Pointer(&mem[0]))}, nil
}

func (c *clockFile) set(offset time.Duration) { atomic.StoreInt64(c.word, int64(offset)) }

func (c *clockFile) get() time.Duration { return time.Duration(atomic.LoadInt64(c.word)) }

func (c *clockFile) close() error {
	if c == nil || c.mem == nil {
		return nil
	}
	err := unix.Munmap(c.mem)
	c.mem, c.word = nil, nil
	if err != nil {
		return errors.New("clock file: munmap: " + err.Error())
	}
	return nil
}
