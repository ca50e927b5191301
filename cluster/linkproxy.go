package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// linkProxy is the proxy that carries one link, wherever it runs: in this
// process (localProxy, the cluster's embedded toxiproxy server) or in a
// toxiproxy the user runs next to an external deployment (remoteProxy,
// through its HTTP API). Cut, Delay and Heal only ever go through this.
type linkProxy interface {
	// addr is the address the link's connecting side dials.
	addr() string
	// target is the address the proxy forwards to.
	target() string
	// setToxic adds t, replacing a toxic of the same name unless it is the
	// same already (replacing a blackhole would close its connections).
	setToxic(t toxicSpec) error
	// heal removes every toxic.
	heal() error
}

// localProxy is a proxy of the cluster's embedded toxiproxy. Its toxics
// are fixed when it is made (newLocalProxy: one linkToxic per stream);
// setToxic and heal change their state, never the chain (linktoxic.go
// says why).
type localProxy struct {
	p       *toxiproxy.Proxy
	streams map[string]*streamState // "upstream", "downstream"
}

// newLocalProxy makes the proxy of one link, listening on listen and
// forwarding to upstream, with its toxics in place, and starts it.
func newLocalProxy(server *toxiproxy.ApiServer, name, listen, upstream string) (localProxy, error) {
	p := toxiproxy.NewProxy(server, name, listen, upstream)
	l := localProxy{p: p, streams: map[string]*streamState{}}
	for _, s := range []string{"upstream", "downstream"} {
		body, err := json.Marshal(map[string]any{
			"name": "tumbler-" + s, "type": linkToxicType, "stream": s,
			"toxicity": 1.0, "attributes": map[string]any{},
		})
		if err != nil {
			return l, err
		}
		w, err := p.Toxics.AddToxicJson(bytes.NewReader(body))
		if err != nil {
			return l, fmt.Errorf("proxy %s: %w", name, err)
		}
		st := newStreamState()
		w.Toxic.(*linkToxic).state = st // before the proxy accepts
		l.streams[s] = st
	}
	if err := server.Collection.Add(p, true); err != nil {
		return l, fmt.Errorf("proxy %s: %w", name, err)
	}
	return l, nil
}

func (l localProxy) addr() string   { return l.p.Listen }
func (l localProxy) target() string { return l.p.Upstream }

func (l localProxy) heal() error {
	for _, st := range l.streams {
		st.update(func(f *streamFault) { *f = streamFault{} })
	}
	return nil
}

func (l localProxy) setToxic(t toxicSpec) error {
	st := l.streams[t.stream]
	if st == nil {
		return fmt.Errorf("proxy %s: no stream %q", l.p.Name, t.stream)
	}
	var change func(*streamFault)
	switch a := t.attrs.(type) {
	case *toxics.ResetToxic:
		change = func(f *streamFault) { f.cut = Reset }
	case *partitionToxic:
		change = func(f *streamFault) { f.cut = Blackhole }
	case *toxics.LatencyToxic:
		lat, jit := time.Duration(a.Latency)*time.Millisecond, time.Duration(a.Jitter)*time.Millisecond
		change = func(f *streamFault) { f.latency, f.jitter = lat, jit }
	default:
		return fmt.Errorf("proxy %s: toxic %s of type %s is not one the cluster applies", l.p.Name, t.name, t.typ)
	}
	st.update(change)
	return nil
}

// remoteProxy is a proxy in a toxiproxy reached through its HTTP API.
type remoteProxy struct {
	p    *toxiclient.Proxy
	dial string
}

func (r *remoteProxy) addr() string   { return r.dial }
func (r *remoteProxy) target() string { return r.p.Upstream }

func (r *remoteProxy) heal() error {
	list, err := r.p.Toxics()
	if err != nil {
		return fmt.Errorf("toxiproxy proxy %s: list toxics: %w", r.p.Name, err)
	}
	var errs []error
	for _, x := range list {
		if err := r.p.RemoveToxic(x.Name); err != nil && apiStatus(err) != http.StatusNotFound {
			errs = append(errs, fmt.Errorf("toxiproxy proxy %s: remove toxic %s: %w", r.p.Name, x.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (r *remoteProxy) setToxic(t toxicSpec) error {
	if t.typ == partitionToxicType {
		// The owner's toxiproxy knows only its own toxics: a blackhole
		// there is the timeout toxic, which lets a close through.
		t.typ, t.attrs = "timeout", &toxics.TimeoutToxic{Timeout: 0}
	}
	attrs, err := attributes(t.attrs)
	if err != nil {
		return err
	}
	for attempt := 0; attempt < 3; attempt++ {
		list, err := r.p.Toxics()
		if err != nil {
			return fmt.Errorf("toxiproxy proxy %s: list toxics: %w", r.p.Name, err)
		}
		for _, x := range list {
			if x.Name != t.name {
				continue
			}
			have, _ := attributes(x.Attributes)
			if x.Type == t.typ && x.Stream == t.stream && x.Toxicity == 1 && reflect.DeepEqual(have, attrs) {
				return nil
			}
			if err := r.p.RemoveToxic(t.name); err != nil && apiStatus(err) != http.StatusNotFound {
				return fmt.Errorf("toxiproxy proxy %s: remove toxic %s: %w", r.p.Name, t.name, err)
			}
		}
		// Toxicity 1 explicitly: the client API's zero value never fires.
		_, err = r.p.AddToxic(t.name, t.typ, t.stream, 1, attrs)
		if apiStatus(err) != http.StatusConflict {
			if err != nil {
				return fmt.Errorf("toxiproxy proxy %s: %w", r.p.Name, err)
			}
			return nil
		}
	}
	return fmt.Errorf("toxiproxy proxy %s: toxic %s keeps being replaced concurrently", r.p.Name, t.name)
}

// attributes normalises toxic attributes through JSON, so ours (a struct)
// and the API's (numbers decoded as float64) compare equal when they are.
func attributes(v any) (toxiclient.Attributes, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out toxiclient.Attributes
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// apiStatus is the HTTP status of a toxiproxy API error, 0 for nil or
// other errors.
func apiStatus(err error) int {
	var api *toxiclient.ApiError
	if errors.As(err, &api) {
		return api.Status
	}
	return 0
}

// remoteProxies looks up the named proxies in the toxiproxy whose API is at
// apiURL. dial maps a proxy name to the address its connecting side dials;
// where it is empty, the proxy's listen address is used, with an
// unspecified host (0.0.0.0, ::) replaced by the API's host.
func remoteProxies(apiURL string, dial map[string]string) (map[string]*remoteProxy, error) {
	cl := toxiclient.NewClient(apiURL)
	if _, err := cl.Version(); err != nil {
		return nil, fmt.Errorf("toxiproxy API at %s does not answer: %w", apiURL, err)
	}
	all, err := cl.Proxies()
	if err != nil {
		return nil, fmt.Errorf("toxiproxy API at %s: list proxies: %w", apiURL, err)
	}
	u, err := url.Parse(apiURL)
	if err != nil {
		return nil, fmt.Errorf("toxiproxy API URL %q: %w", apiURL, err)
	}
	out := make(map[string]*remoteProxy, len(dial))
	for name, addr := range dial {
		if all[name] == nil {
			return nil, fmt.Errorf("toxiproxy at %s has no proxy named %q", apiURL, name)
		}
		// Proxies() decodes a map, which leaves the client unset; Proxy()
		// returns one bound to the client.
		p, err := cl.Proxy(name)
		if err != nil {
			return nil, fmt.Errorf("toxiproxy at %s: proxy %q: %w", apiURL, name, err)
		}
		if !p.Enabled {
			return nil, fmt.Errorf("toxiproxy at %s: proxy %q is disabled; enable it first", apiURL, name)
		}
		if addr == "" {
			addr = dialAddr(p.Listen, u.Hostname())
		}
		out[name] = &remoteProxy{p: p, dial: addr}
	}
	return out, nil
}

// dialAddr turns a listen address into one a client can dial.
func dialAddr(listen, apiHost string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = apiHost
	}
	return net.JoinHostPort(host, port)
}
