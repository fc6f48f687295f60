package natstest

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Cluster is an in-process JetStream cluster of several servers on loopback, as the production NATS (the Helm
// chart's 3-node cluster) runs, so a test can check replication (R3 streams and buckets).
type Cluster struct {
	Servers []*server.Server
}

// URL lists every node's client URL, comma-separated, as a client configured for the cluster would.
func (c *Cluster) URL() string {
	urls := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		urls[i] = s.ClientURL()
	}
	return strings.Join(urls, ",")
}

// StartCluster runs n JetStream servers (n ≥ 3 for R3) routed into one cluster, each storing its data under its own
// temp dir, waits until the JetStream meta group has a leader that every node knows, and shuts them down when the
// test ends. A clustered JetStream server refuses to start without configured routes, so the route ports are
// chosen first (free loopback ports, closed again just before the servers take them) and every node gets all of
// them (a route to itself is ignored).
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	ports := make([]int, n)
	routes := make([]*url.URL, n)
	listeners := make([]net.Listener, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		listeners[i], ports[i] = l, l.Addr().(*net.TCPAddr).Port
		routes[i] = &url.URL{Scheme: "nats-route", Host: l.Addr().String()}
	}
	for _, l := range listeners {
		l.Close()
	}
	c := &Cluster{}
	for i := range n {
		c.Servers = append(c.Servers, run(tb, &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Port:       server.RANDOM_PORT,
			StoreDir:   tb.TempDir(),
			Cluster:    server.ClusterOpts{Name: "zoea-test", Host: "127.0.0.1", Port: ports[i]},
			Routes:     routes,
		}))
	}
	// The meta group elects a leader once the nodes see each other; until every node knows the same leader and
	// all n peers, stream creation may fail with "insufficient resources".
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for !c.ready(n) {
		select {
		case <-tick.C:
		case <-deadline.C:
			tb.Fatalf("natstest: the %d-node JetStream cluster elected no meta leader known to every node within 30s", n)
		}
	}
	return c
}

// ready: every node is clustered and current with the meta group, exactly one leads it, and the leader sees all n
// nodes online with JetStream (JetStreamClusterPeers answers on the leader only).
func (c *Cluster) ready(n int) bool {
	leaders := 0
	for _, s := range c.Servers {
		if !s.JetStreamIsClustered() || !s.JetStreamIsCurrent() {
			return false
		}
		if s.JetStreamIsLeader() {
			leaders++
			if len(s.JetStreamClusterPeers()) != n {
				return false
			}
		}
	}
	return leaders == 1
}
