package cluster

import "context"

// adoption is what an Adopter declares of the deployment it adopts.
type adoption struct {
	proxies  map[string]linkProxy // by link name
	announce map[string]string    // data node → the address it announces
	// sentinelAnnounce: Sentinel → the address it announces to the other
	// Sentinels, which is where a client that asks them finds it.
	sentinelAnnounce map[string]string
	persistence      Persistence // declared, or ""
	apiAddr          string
}

// adopt takes over a running deployment: its links, its nodes (which must
// answer), and the roles it has now, as the topology's kind learns them.
func (c *Cluster) adopt(ctx context.Context, a Adopter, persistenceGiven bool) error {
	ad, err := a.adopt(c.topo, c.spec.Clients)
	if err != nil {
		return err
	}
	c.announce, c.apiAddr = ad.announce, ad.apiAddr
	c.proxies = ad.proxies
	for _, l := range c.wantedLinks() {
		if c.proxies[l.String()] != nil {
			c.links = append(c.links, l)
		}
	}
	for name, a := range ad.sentinelAnnounce {
		c.announce[name] = a
	}
	if !persistenceGiven && ad.persistence != "" {
		c.persistKnown = true
		c.spec.Persistence = ad.persistence
		for _, name := range c.order {
			c.nodes[name].persist = ad.persistence
		}
	}
	all := append(c.Nodes(), c.Sentinels()...)
	if err := c.each(all, func(n *node) error { return c.startNode(ctx, n) }); err != nil {
		return err
	}
	return c.kind.adopted(ctx, c)
}
