package cluster

import (
	"fmt"
	"github.com/tumbler-dev/tumbler/internal/clockshim"
	"sync"
	"time"
)

// served is what a provider keeps of one process whatever runs it (a host
// process or a container): the parts SetClock and LogFile need.
type served struct {
	name string
	mu   sync.Mutex // serialises Start, Kill, Pause, Resume on this process
	dir  string
	log  string
	clk  *clockshim.File
}

func (s *served) setClock(offset time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clk == nil {
		return fmt.Errorf("set clock of %s: started without the clock shim", s.name)
	}
	s.clk.Set(offset)
	return nil
}

func (s *served) setDrift(d clockshim.Drift) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clk == nil {
		return fmt.Errorf("set clock rate of %s: started without the clock shim", s.name)
	}
	s.clk.SetDrift(d)
	return nil
}

func (s *served) logFile() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log
}
