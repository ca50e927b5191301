package cluster

// Info describes a cluster for a run's report.
type Info struct {
	Topology string     `json:"topology"`
	Provider string     `json:"provider"`
	Dir      string     `json:"dir"`
	API      string     `json:"toxiproxy_api,omitempty"`
	Primary  string     `json:"primary,omitempty"` // the harness's view; see Cluster.Primary
	Procs    []ProcInfo `json:"procs"`
	Links    []LinkInfo `json:"links"`
}

// ProcInfo is one data node or Sentinel.
type ProcInfo struct {
	Name        string      `json:"name"`
	Sentinel    bool        `json:"sentinel,omitempty"`
	Addr        string      `json:"addr"`
	Up          bool        `json:"up"`
	Pid         int         `json:"pid,omitempty"`
	Paused      bool        `json:"paused,omitempty"`
	Persistence Persistence `json:"persistence,omitempty"`
	Upstream    string      `json:"upstream,omitempty"` // the node it replicates from
	Log         string      `json:"log,omitempty"`
}

// LinkInfo is one proxy.
type LinkInfo struct {
	Name     string `json:"name"`
	Listen   string `json:"listen"`
	Upstream string `json:"upstream"`
}

// processInspector is implemented by providers that run local processes
// (ProcessProvider) and can name their pids for a report.
type processInspector interface {
	Pid(name string) int
	Paused(name string) bool
}

// Info describes the cluster as it is now.
func (c *Cluster) Info() Info {
	in := Info{Topology: c.topo.String(), Provider: c.prov.Name(), Dir: c.dir, API: c.apiAddr}
	c.mu.Lock()
	in.Primary = c.primary
	c.mu.Unlock()
	pp, _ := c.prov.(processInspector)
	for _, name := range append(c.Nodes(), c.Sentinels()...) {
		n := c.nodes[name]
		n.mu.Lock()
		pi := ProcInfo{Name: name, Sentinel: n.sentinel, Addr: n.addr, Up: n.up, Log: c.prov.LogFile(name)}
		if !n.sentinel {
			pi.Persistence = n.persist
		}
		n.mu.Unlock()
		c.mu.Lock()
		pi.Upstream = n.upstream
		c.mu.Unlock()
		if pp != nil {
			pi.Pid, pi.Paused = pp.Pid(name), pp.Paused(name)
		}
		in.Procs = append(in.Procs, pi)
	}
	for _, l := range c.links {
		p := c.proxies[l.String()]
		in.Links = append(in.Links, LinkInfo{Name: l.String(), Listen: p.addr(), Upstream: p.target()})
	}
	return in
}
